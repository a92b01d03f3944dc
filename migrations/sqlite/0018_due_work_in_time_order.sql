-- Work is claimed by when it falls due: the outbox and the webhook deliveries keep every row
-- once done, so a claim that walked them in id order (the primary key) read the whole history
-- of the sale before it found the rows due, and one that filtered the pending rows by the
-- running clock read every row scheduled for later (payments watched, retries backing off).
-- Ordered by due time, a claim reads the rows due and stops.
drop index outbox_ready;
create index outbox_due on outbox (run_after, id) where done_at is null;

drop index webhook_deliveries_ready;
create index webhook_deliveries_due on webhook_deliveries (run_after, id)
    where done_at is null and failed_at is null;

-- A payment attempt that closes marks its own authorize job, if still open: found by its
-- attempt among the open rows, not by reading them all.
create index outbox_open_by_attempt on outbox (attempt_id) where done_at is null;
