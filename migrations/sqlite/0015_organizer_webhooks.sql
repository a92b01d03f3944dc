-- Webhooks to the organizer's own systems: subscriptions, the delivery outbox (one row per
-- subscription and fact, written in the transaction that made the fact where there is one)
-- and every delivery attempt, kept for the dashboard.

create table webhook_subscriptions (
    webhook_id  text primary key,
    event_id    text not null references events (event_id),
    url         text not null,
    -- Signs each delivery (HMAC-SHA256); shown to the organizer once, at creation.
    secret      text not null,
    -- The subscribed kinds as bits (`reservation::hooks::Kind::bit`), so one `&` matches on
    -- both databases.
    kinds       integer not null check (kinds > 0),
    created_at  integer not null default (cast(unixepoch('subsec') * 1000 as integer))
);
create index webhook_subscriptions_event on webhook_subscriptions (event_id);

create table webhook_deliveries (
    id               integer primary key autoincrement,
    webhook_id       text not null references webhook_subscriptions (webhook_id) on delete cascade,
    event_id         text not null,
    kind             text not null,
    -- The fact's own id (`order.confirmed:o_…`): the receiver's deduplication key, and ours
    -- when several gateways notice the same fact.
    fact_id          text not null,
    data             text not null default '{}',
    tries            integer not null default 0,
    run_after        integer not null default (cast(unixepoch('subsec') * 1000 as integer)),
    lease_until      integer,
    done_at          integer,
    -- Given up after the retry window: logged, and shown as `failed`.
    failed_at        integer,
    last_status      integer,
    last_error       text,
    created_at       integer not null default (cast(unixepoch('subsec') * 1000 as integer)),
    unique (webhook_id, fact_id)
);
create index webhook_deliveries_ready on webhook_deliveries (run_after)
    where done_at is null and failed_at is null;

create table webhook_attempts (
    id           integer primary key autoincrement,
    delivery_id  integer not null references webhook_deliveries (id) on delete cascade,
    at           integer not null default (cast(unixepoch('subsec') * 1000 as integer)),
    status_code  integer,
    error        text,
    duration_ms  integer not null
);
create index webhook_attempts_delivery on webhook_attempts (delivery_id);

-- Orders confirmed and refunded are recorded for the subscriptions in the very transaction
-- that sells or refunds. No subscription: one index probe that finds nothing.
create trigger hook_order_confirmed after insert on orders
begin
    insert or ignore into webhook_deliveries (webhook_id, event_id, kind, fact_id, data)
    select s.webhook_id, new.event_id, 'order.confirmed', 'order.confirmed:' || new.order_id,
           json_object('order_id', new.order_id, 'hold_id', new.hold_id,
                       'seats', json(new.seats), 'total_cents', new.total_cents)
    from webhook_subscriptions s
    where s.event_id = new.event_id and (s.kinds & 16) <> 0;
end;

create trigger hook_order_refunded after update of status on orders
when new.status = 'refunded' and old.status <> 'refunded'
begin
    insert or ignore into webhook_deliveries (webhook_id, event_id, kind, fact_id, data)
    select s.webhook_id, new.event_id, 'order.refunded', 'order.refunded:' || new.order_id,
           json_object('order_id', new.order_id, 'hold_id', new.hold_id,
                       'seats', json(new.seats), 'total_cents', new.total_cents)
    from webhook_subscriptions s
    where s.event_id = new.event_id and (s.kinds & 32) <> 0;
end;

-- A pause or a resume is recorded in the transaction that changes the admission controls,
-- whichever statement changes them; the version names the change, once.
create trigger hook_pause after update of paused on admission_controls
when old.paused <> new.paused
begin
    insert or ignore into webhook_deliveries (webhook_id, event_id, kind, fact_id, data)
    select s.webhook_id, new.event_id,
           case when new.paused then 'queue.paused' else 'queue.resumed' end,
           case when new.paused then 'queue.paused:' else 'queue.resumed:' end
               || new.event_id || ':' || new.version,
           json_object('version', new.version)
    from webhook_subscriptions s
    where s.event_id = new.event_id
      and (s.kinds & (case when new.paused then 2 else 4 end)) <> 0;
end;
