-- The priority lane's served frontier, so that after a Redis loss a priority ticket already
-- offered (lapsed or claimed since) does not come back ahead of its lane: the highest score
-- the lane offered (a pre-queue rank in [0, 1), or a priority place numbered from 2^50).
alter table admission_checkpoints add column priority_through real;
