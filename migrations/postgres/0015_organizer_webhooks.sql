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
    created_at  timestamptz not null default clock_timestamp()
);
create index webhook_subscriptions_event on webhook_subscriptions (event_id);

create table webhook_deliveries (
    id               bigserial primary key,
    webhook_id       text not null references webhook_subscriptions (webhook_id) on delete cascade,
    event_id         text not null,
    kind             text not null,
    -- The fact's own id (`order.confirmed:o_…`): the receiver's deduplication key, and ours
    -- when several gateways notice the same fact.
    fact_id          text not null,
    data             text not null default '{}',
    tries            integer not null default 0,
    run_after        timestamptz not null default clock_timestamp(),
    lease_until      timestamptz,
    done_at          timestamptz,
    -- Given up after the retry window: logged, and shown as `failed`.
    failed_at        timestamptz,
    last_status      integer,
    last_error       text,
    created_at       timestamptz not null default clock_timestamp(),
    unique (webhook_id, fact_id)
);
create index webhook_deliveries_ready on webhook_deliveries (run_after)
    where done_at is null and failed_at is null;

create table webhook_attempts (
    id           bigserial primary key,
    delivery_id  bigint not null references webhook_deliveries (id) on delete cascade,
    at           timestamptz not null default clock_timestamp(),
    status_code  integer,
    error        text,
    duration_ms  bigint not null
);
create index webhook_attempts_delivery on webhook_attempts (delivery_id);

-- Orders confirmed and refunded are recorded for the subscriptions in the very transaction
-- that sells or refunds (finalize is one statement on PostgreSQL, so a trigger is how the
-- record joins it). No subscription: one index probe that finds nothing.
create function fg_hook_order() returns trigger language plpgsql as $$
declare
    v_kind text;
    v_bit  integer;
begin
    if tg_op = 'INSERT' then
        v_kind := 'order.confirmed';
        v_bit := 16;
    elsif new.status = 'refunded' and old.status <> 'refunded' then
        v_kind := 'order.refunded';
        v_bit := 32;
    else
        return null;
    end if;
    insert into webhook_deliveries (webhook_id, event_id, kind, fact_id, data)
    select s.webhook_id, new.event_id, v_kind, v_kind || ':' || new.order_id,
           json_build_object('order_id', new.order_id, 'hold_id', new.hold_id,
                             'seats', new.seats::json, 'total_cents', new.total_cents)::text
    from webhook_subscriptions s
    where s.event_id = new.event_id and (s.kinds & v_bit) <> 0
    on conflict (webhook_id, fact_id) do nothing;
    return null;
end $$;

create trigger hook_orders after insert or update of status on orders
    for each row execute function fg_hook_order();

-- A pause or a resume is recorded in the transaction that changes the admission controls,
-- whichever statement changes them; the version names the change, once.
create function fg_hook_pause() returns trigger language plpgsql as $$
declare
    v_kind text := case when new.paused then 'queue.paused' else 'queue.resumed' end;
    v_bit  integer := case when new.paused then 2 else 4 end;
begin
    insert into webhook_deliveries (webhook_id, event_id, kind, fact_id, data)
    select s.webhook_id, new.event_id, v_kind, v_kind || ':' || new.event_id || ':' || new.version,
           json_build_object('version', new.version)::text
    from webhook_subscriptions s
    where s.event_id = new.event_id and (s.kinds & v_bit) <> 0
    on conflict (webhook_id, fact_id) do nothing;
    return null;
end $$;

create trigger hook_pause after update of paused on admission_controls
    for each row when (old.paused is distinct from new.paused)
    execute function fg_hook_pause();
