-- The payments saga (issue 4): a webhook delivered twice answers with what the first did.
alter table webhook_events add column outcome text;
