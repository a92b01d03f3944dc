-- Named organizer keys with a role, kept as hashes only. A key takes one of a fixed number of
-- slots, so the bound on live keys is a constraint the database judges even when two admins
-- add keys at once; a revoked key's row is deleted (the audit log keeps its id and name).
create table organizer_keys (
    key_id      text primary key,
    slot        integer not null unique check (slot between 1 and 100),
    name        text not null,
    role        text not null check (role in ('viewer', 'operator', 'admin')),
    key_sha256  text not null unique,
    last4       text not null,
    created_at  timestamptz not null default clock_timestamp()
);

-- Which key made each change (its name stays in `actor`).
alter table audit_log add column key_id text;
create index audit_log_by_event on audit_log (event_id, id);

-- The exports read an event's rows in pages by id (ids are time-ordered: `o_<uuid v7>`).
create index orders_by_event_id on orders (event_id, order_id);
create index holds_by_event_id on holds (event_id, hold_id);
create index admission_sessions_by_event_id on admission_sessions (event_id, session_id);
