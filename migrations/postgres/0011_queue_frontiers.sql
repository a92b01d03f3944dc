-- The served frontiers, so that after a Redis loss a ticket already offered (lapsed or
-- claimed since) does not come back ahead of the line: the FIFO place served through, and the
-- pre-queue rank (in [0, 1)) of the last pre-queue ticket offered.
alter table admission_checkpoints
    add column fifo_through bigint not null default 0,
    add column prequeue_through double precision;
