-- The reservation core (DESIGN §4). Ids are text everywhere so both dialects share one
-- Rust shape; times are timestamptz and every ownership decision reads clock_timestamp().

-- Helpers that let one SQL text serve both dialects: the store writes MS(x), TS(x), MSEC(x),
-- JSON_EACH(x) and IN_JSON(x)); SQLite reads them as the identity or its built-in json_each.
create function fg_ms(t timestamptz) returns bigint language sql immutable parallel safe
    as $$ select (extract(epoch from t) * 1000)::bigint $$;
create function fg_ts(ms bigint) returns timestamptz language sql immutable parallel safe
    as $$ select to_timestamp(ms / 1000.0) $$;
create function fg_msec(ms bigint) returns interval language sql immutable parallel safe
    as $$ select ms * interval '1 millisecond' $$;
create function fg_arr(j text) returns text[] language sql immutable parallel safe
    as $$ select array(select jsonb_array_elements_text(j::jsonb)) $$;
create function fg_each(j text) returns table (value text) language sql immutable parallel safe
    as $$ select jsonb_array_elements_text(j::jsonb) $$;

create table events (
    event_id            text primary key,
    name                text not null,
    opens_at            timestamptz not null,
    hold_ttl_s          integer not null default 300 check (hold_ttl_s > 0),
    -- Test-only override of hold_ttl_s in milliseconds (expiry races need 150 ms holds).
    hold_ttl_ms         integer check (hold_ttl_ms > 0),
    max_hold_s          integer not null default 900 check (max_hold_s > 0),
    max_seats_per_hold  integer not null default 6 check (max_seats_per_hold > 0),
    resolve_s           integer not null default 60 check (resolve_s > 0),
    abandon_s           integer not null default 600 check (abandon_s > 0),
    currency            text not null default 'usd',
    -- Published at creation (sha-256 of the seed); the seed is revealed at opening.
    fairness_seed       text not null,
    seed_commitment     text not null,
    created_at          timestamptz not null default clock_timestamp()
);

-- What the organizer tunes live; every admission tick reads it with its version, so a lost
-- pub/sub message or a Redis wipe cannot undo a pause.
create table admission_controls (
    event_id      text primary key references events (event_id),
    rate_per_min  integer not null default 600 check (rate_per_min >= 0),
    max_active    integer not null default 1000 check (max_active >= 0),
    session_s     integer not null default 1800 check (session_s > 0),
    offer_s       integer not null default 120 check (offer_s > 0),
    paused        boolean not null default false,
    closed        boolean not null default false,
    version       bigint not null default 1,
    updated_at    timestamptz not null default clock_timestamp()
);

-- The one authoritative row per event seat. General admission is independent seat ids too.
create table seats (
    event_id            text not null references events (event_id),
    seat_id             text not null,
    section             text not null,
    row_label           text not null default '',
    number              integer not null default 0,
    price_cents         bigint not null check (price_cents >= 0),
    state               text not null default 'available'
                        check (state in ('available', 'held', 'paying', 'sold')),
    hold_id             text,
    hold_expires_at     timestamptz,
    payment_attempt_id  text,
    order_id            text,
    version             bigint not null default 0,
    primary key (event_id, seat_id),
    -- The row names an owner exactly when it is not available.
    check ((state = 'available') = (hold_id is null and order_id is null)),
    check (state <> 'paying' or payment_attempt_id is not null),
    check (state <> 'sold' or order_id is not null)
);
-- General admission picks free rows of a section; counts by state.
create index seats_by_section_state on seats (event_id, section, state);
create index seats_by_hold on seats (hold_id) where hold_id is not null;
-- The sweeper finds expired held rows without scanning every seat.
create index seats_held_expiry on seats (hold_expires_at) where state = 'held';

-- One admission session per ticket: claiming twice returns the same session.
create table admission_sessions (
    session_id   text primary key,
    event_id     text not null references events (event_id),
    ticket_id    text not null,
    queue_place  bigint,
    created_at   timestamptz not null default clock_timestamp(),
    expires_at   timestamptz not null,
    ended_at     timestamptz,
    end_reason   text,
    unique (event_id, ticket_id)
);
create index admission_sessions_live on admission_sessions (event_id) where ended_at is null;

create table holds (
    hold_id             text primary key,
    event_id            text not null references events (event_id),
    session_id          text not null references admission_sessions (session_id),
    receipt_key         text not null unique,
    -- held, paying: live. confirmed, released, expired, abandoned: final.
    state               text not null
                        check (state in ('held', 'paying', 'confirmed', 'released', 'expired', 'abandoned')),
    seats               text not null, -- JSON array of seat ids, sorted
    total_cents         bigint not null,
    created_at          timestamptz not null default clock_timestamp(),
    expires_at          timestamptz not null,
    -- created_at + max_hold_s: no extension or decline grace goes past it.
    max_expires_at      timestamptz not null,
    order_id            text,
    last_payment_error  text,
    ended_at            timestamptz
);
-- One live hold per admission session (two tabs cannot both hold).
create unique index holds_one_live_per_session on holds (session_id) where state in ('held', 'paying');
create index holds_by_event_state on holds (event_id, state);

-- One row per try at taking money; its id is the provider's idempotency key.
create table payment_attempts (
    attempt_id           text primary key,
    hold_id              text not null references holds (hold_id),
    event_id             text not null references events (event_id),
    amount_cents         bigint not null,
    currency             text not null,
    payment_method       text not null,
    -- pending: asked or about to be asked; ambiguous: no clear answer yet;
    -- authorized: money held, order not yet final; confirmed/captured: sold;
    -- declined, voided, refunded, abandoned: final without a sale.
    state                text not null
                         check (state in ('pending', 'ambiguous', 'authorized', 'confirmed', 'captured',
                                          'declined', 'voided', 'refunded', 'abandoned')),
    provider_payment_id  text,
    last_error           text,
    created_at           timestamptz not null default clock_timestamp(),
    resolve_by           timestamptz not null,
    abandon_at           timestamptz not null,
    updated_at           timestamptz not null default clock_timestamp()
);
-- At most one open attempt per hold: a second checkout cannot start a second charge.
create unique index payment_attempts_one_open_per_hold on payment_attempts (hold_id)
    where state in ('pending', 'ambiguous', 'authorized');
create index payment_attempts_by_event_state on payment_attempts (event_id, state);
create unique index payment_attempts_provider_id on payment_attempts (provider_payment_id)
    where provider_payment_id is not null;

create table orders (
    order_id        text primary key,
    event_id        text not null references events (event_id),
    hold_id         text not null unique references holds (hold_id),
    attempt_id      text not null unique references payment_attempts (attempt_id),
    seats           text not null, -- JSON array of seat ids
    total_cents     bigint not null,
    status          text not null check (status in ('confirmed', 'refunded')),
    payment_status  text not null check (payment_status in ('authorized', 'captured', 'refunded')),
    created_at      timestamptz not null default clock_timestamp()
);

-- The second fence: a seat can be in one sale only, whatever the seats row says.
create table sales (
    event_id  text not null,
    seat_id   text not null,
    order_id  text not null references orders (order_id),
    primary key (event_id, seat_id),
    foreign key (event_id, seat_id) references seats (event_id, seat_id)
);

-- A POST that creates something answers a repeated key with its first answer.
create table idempotency_keys (
    scope        text not null, -- session id, or client address for joins
    route        text not null,
    key          text not null,
    body_hash    text not null,
    status_code  integer,       -- null while the first request is still running
    response     text,
    created_at   timestamptz not null default clock_timestamp(),
    primary key (scope, route, key)
);

-- Work to do after a commit (provider calls, signals to admission), claimed with a lease.
create table outbox (
    id           bigserial primary key,
    kind         text not null,
    event_id     text,
    attempt_id   text,
    hold_id      text,
    payload      text not null default '{}',
    tries        integer not null default 0,
    run_after    timestamptz not null default clock_timestamp(),
    lease_until  timestamptz,
    done_at      timestamptz,
    last_error   text,
    created_at   timestamptz not null default clock_timestamp()
);
create index outbox_ready on outbox (run_after) where done_at is null;

-- Every step of every hold and payment, appended in the transaction that made it.
create table reservation_events (
    id          bigserial primary key,
    event_id    text not null,
    kind        text not null,
    hold_id     text,
    attempt_id  text,
    order_id    text,
    seats       text,
    detail      text,
    at          timestamptz not null default clock_timestamp()
);
create index reservation_events_by_hold on reservation_events (hold_id);
create index reservation_events_by_event_kind on reservation_events (event_id, kind);

-- Provider webhooks, deduplicated on the provider's event id.
create table webhook_events (
    provider_event_id  text primary key,
    kind               text not null,
    payment_id         text,
    attempt_id         text,
    matched            boolean not null,
    received_at        timestamptz not null default clock_timestamp()
);

-- Admission's durable checkpoint: survives a Redis loss.
create table admission_checkpoints (
    event_id    text primary key references events (event_id),
    epoch       text not null,
    join_seq    bigint not null default 0,
    served      bigint not null default 0,
    updated_at  timestamptz not null default clock_timestamp()
);

-- Generated secrets (token secret, organizer key hash) kept so a restart logs no one out.
create table settings (
    name   text primary key,
    value  text not null
);

create table audit_log (
    id        bigserial primary key,
    actor     text not null,
    action    text not null,
    event_id  text,
    detail    text not null default '{}',
    at        timestamptz not null default clock_timestamp()
);
