-- The FIFO places an earlier Redis loss left to come back, (from, to]: behind the FIFO
-- frontier, yet still waiting unless their tokens brought them back and they were offered, so
-- a second loss does not tell them their turn passed. Empty when to <= from.
alter table admission_checkpoints
    add column fifo_returning_from bigint not null default 0,
    add column fifo_returning_to bigint not null default 0;
