-- A job that only looks again later for money a timed-out request may still create (after
-- its attempt was abandoned) is not work falling behind: backpressure leaves it out of the
-- backlog's age. 1 while watching, 0 otherwise.
alter table outbox add column watching integer not null default 0;
