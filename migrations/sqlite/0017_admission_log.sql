-- What admission did, kept for the organizer's admission log and per-minute timeline.
--
-- Every offer the meter made: written by the tick that made it, in one statement, before the
-- buyers hear of it. `place` is the join sequence the buyer's token carries (priority places
-- count from 2^50), which is also `admission_sessions.queue_place` once claimed, so an offer
-- with no session for its place whose `offer_expires_at` has passed lapsed unclaimed.
-- `offer_expires_at` is written from the database clock after the queue made the offer, so
-- it never falls before the queue's own deadline for the claim.
create table queue_offers (
    event_id          text not null references events (event_id),
    place             integer not null,
    offered_at        integer not null,
    offer_expires_at  integer not null,
    primary key (event_id, place)
);
create index queue_offers_by_time on queue_offers (event_id, offered_at);

-- The queue's cumulative join count (both lanes), the greatest seen in each minute (database
-- clock). Joins in a minute are the difference from the row before it.
create table queue_minutes (
    event_id     text not null references events (event_id),
    minute       integer not null,
    joins_total  integer not null,
    primary key (event_id, minute)
);

-- The timeline counts claims, holds and orders by minute, and the admission log finds the
-- session of an offer by its place.
create index admission_sessions_by_event_time on admission_sessions (event_id, created_at);
create index admission_sessions_by_event_place on admission_sessions (event_id, queue_place);
create index holds_by_event_time on holds (event_id, created_at);
create index orders_by_event_time on orders (event_id, created_at);
