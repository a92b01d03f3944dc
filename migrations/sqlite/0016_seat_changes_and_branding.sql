-- The stadium map reads what changed since the version it holds (see the PostgreSQL twin):
-- each event counts its seats' availability changes and stamps the changed seats. SQLite
-- has one writer at a time, so versions commit in order by construction.
alter table events add column availability_version integer not null default 0;
-- The organizer's look of the pages (JSON), shown as text, never as markup.
alter table events add column branding text;
-- JSON array of the origins allowed to frame the event's page (the embed mode).
alter table events add column frame_ancestors text;
alter table seats add column availability_version integer not null default 0;
