-- Holds in one round trip. Taking seats used to be eight statements (busy check, begin, holder
-- read, locking select, update, hold row, log line, commit): two thirds of the time went to
-- waiting for the network, not to PostgreSQL. These functions run the same steps server-side
-- and answer with which outcome happened, so the store maps each one to the same typed error.
--
-- Seat lists arrive as a JSON array (the store's one wire shape for lists) and are turned into
-- a text[] once; every statement then compares `seat_id = any(v_seats)` against a plain array
-- variable, which PostgreSQL's generic plan (the one a prepared statement settles on) turns
-- into a primary-key probe. Comparing against `fg_arr($2)` made the generic plan a bitmap scan
-- over every `available` and `held` index entry of the event, dead versions included.

-- Ends `held` holds whose time has passed, as `Store::expire_holds` does: HoldExpired in the
-- log, the session ended, and admission told through the outbox.
create function fg_expire_holds(p_holds text[]) returns integer language plpgsql as $$
declare
    r record;
    n integer := 0;
begin
    for r in
        update holds set state = 'expired', ended_at = clock_timestamp()
        where hold_id = any(p_holds) and state = 'held' and expires_at <= clock_timestamp()
        returning hold_id, event_id, session_id, seats
    loop
        insert into reservation_events (event_id, kind, hold_id, seats)
        values (r.event_id, 'HoldExpired', r.hold_id, r.seats);
        update admission_sessions set ended_at = clock_timestamp(), end_reason = 'expired'
        where session_id = r.session_id and ended_at is null;
        insert into outbox (kind, event_id, hold_id, payload)
        values ('session_ended', r.event_id, r.hold_id,
                jsonb_build_object('session_id', r.session_id, 'event_id', r.event_id,
                                   'hold_id', r.hold_id, 'reason', 'expired')::text);
        n := n + 1;
    end loop;
    return n;
end $$;

-- What a hold call answers. `outcome` is one of:
--   held        the hold was written; the remaining columns describe it
--   taken       `seats` lists the requested seats someone else owns (nothing was written)
--   unknown     `seats` lists the requested seats the event does not have
--   no_session, ended, limit: the session is missing, over, or already holds
--   too_many    more seats than `max_seats` allows
--   short       general admission found fewer free unlocked seats than asked (look again)
create type fg_hold_answer as (
    outcome         text,
    seats           text,
    event_id        text,
    max_seats       bigint,
    total_cents     bigint,
    created_ms      bigint,
    expires_ms      bigint,
    max_expires_ms  bigint
);

-- The session checks shared by both kinds of hold. Returns the outcome that stops the hold, or
-- null with the event and limits filled in. A session whose own hold ran out is ended here
-- (DESIGN §3) and that change commits with the answer.
create function fg_holder(p_session text, p_count integer, inout a fg_hold_answer,
                          out ttl_ms bigint, out max_hold_ms bigint)
language plpgsql as $$
declare
    r record;
begin
    select s.event_id, (s.ended_at is not null or s.expires_at <= clock_timestamp()) as ended,
           coalesce(e.hold_ttl_ms, e.hold_ttl_s * 1000)::bigint as ttl_ms,
           e.max_hold_s::bigint * 1000 as max_hold_ms, e.max_seats_per_hold::bigint as max_seats,
           h.hold_id as live_hold,
           (h.state = 'held' and h.expires_at <= clock_timestamp()) as live_expired
    into r
    from admission_sessions s join events e on e.event_id = s.event_id
    left join holds h on h.session_id = s.session_id and h.state in ('held', 'paying')
    where s.session_id = p_session;
    if not found then
        a.outcome := 'no_session';
        return;
    end if;
    a.event_id := r.event_id;
    a.max_seats := r.max_seats;
    ttl_ms := r.ttl_ms;
    max_hold_ms := r.max_hold_ms;
    if r.ended then
        a.outcome := 'ended';
    elsif p_count > r.max_seats then
        a.outcome := 'too_many';
    elsif r.live_hold is not null and r.live_expired then
        perform fg_expire_holds(array[r.live_hold]);
        a.outcome := 'ended';
    elsif r.live_hold is not null then
        a.outcome := 'limit';
    end if;
end $$;

-- Takes the locked, free seats `v_seats` (sorted) for the session: the conditional update, the
-- holds those seats were taken over from, the hold row and its log line.
create function fg_take(p_session text, p_seats text[], p_prev text[], p_hold_id text,
                        p_receipt text, p_ttl_ms bigint, p_max_hold_ms bigint,
                        inout a fg_hold_answer)
language plpgsql as $$
declare
    v_now timestamptz := clock_timestamp();
    -- The same compact text serde writes (ids never need escaping).
    v_json text := '["' || array_to_string(p_seats, '","') || '"]';
    v_taken integer;
begin
    update seats set state = 'held', hold_id = p_hold_id,
                     hold_expires_at = v_now + p_ttl_ms * interval '1 millisecond',
                     payment_attempt_id = null, version = version + 1
    where event_id = a.event_id and seat_id = any(p_seats)
      and (state = 'available' or (state = 'held' and hold_expires_at <= clock_timestamp()));
    get diagnostics v_taken = row_count;
    if v_taken <> cardinality(p_seats) then
        -- Cannot happen under the row locks taken before; if it did, nothing may stay written.
        raise exception 'seats changed under their row locks' using errcode = 'FG001';
    end if;
    if cardinality(p_prev) > 0 then
        perform fg_expire_holds(p_prev);
    end if;
    -- A second tab of the same session racing this one fails here on the one-live-hold index
    -- (the store answers HoldLimit).
    insert into holds (hold_id, event_id, session_id, receipt_key, state, seats, total_cents,
                       created_at, expires_at, max_expires_at)
    values (p_hold_id, a.event_id, p_session, p_receipt, 'held', v_json, a.total_cents, v_now,
            v_now + p_ttl_ms * interval '1 millisecond',
            v_now + p_max_hold_ms * interval '1 millisecond');
    insert into reservation_events (event_id, kind, hold_id, seats)
    values (a.event_id, 'ReservationCreated', p_hold_id, v_json);
    -- A hold is working state: if a crash loses it, a seat nobody paid for goes back on sale.
    -- Its commit does not wait for the disk; begin-payment's does, and because the WAL is
    -- flushed in order, that synchronous commit also makes this hold durable. An operator who
    -- wants every hold on disk sets `floodgate.durable_holds = on` (database or role).
    if current_setting('floodgate.durable_holds', true) is distinct from 'on' then
        perform set_config('synchronous_commit', 'off', true);
    end if;
    a.outcome := 'held';
    a.seats := v_json;
    a.created_ms := fg_ms(v_now);
    a.expires_ms := fg_ms(v_now + p_ttl_ms * interval '1 millisecond');
    a.max_expires_ms := fg_ms(v_now + p_max_hold_ms * interval '1 millisecond');
end $$;

-- Named seats, all or nothing. `p_seats` is the sorted JSON array of distinct seat ids.
create function fg_hold(p_session text, p_seats text, p_hold_id text, p_receipt text)
returns fg_hold_answer language plpgsql as $$
declare
    v_seats text[] := array(select jsonb_array_elements_text(p_seats::jsonb));
    a fg_hold_answer;
    h record;
    v_busy text[];
    v_found text[];
    v_prev text[];
begin
    -- Losers of a taken seat are turned away by this read alone, before any lock or write: a
    -- seat seen owned now may free up a moment later, which is the same answer as losing the
    -- race. Winning is only ever decided under the row locks below.
    v_busy := array(
        select seat_id from seats
        where event_id = (select event_id from admission_sessions
                          where session_id = p_session and ended_at is null
                            and expires_at > clock_timestamp())
          and seat_id = any(v_seats)
          and not (state = 'available' or (state = 'held' and hold_expires_at <= clock_timestamp()))
        order by seat_id);
    if cardinality(v_busy) > 0 then
        a.outcome := 'taken';
        a.seats := array_to_json(v_busy)::text;
        return a;
    end if;
    select * into h from fg_holder(p_session, cardinality(v_seats), a);
    a := h.a;
    if a.outcome is not null then
        return a;
    end if;
    -- Lock in seat order: two buyers wanting {S3,S7} and {S7,S3} queue, never deadlock.
    select array_agg(seat_id),
           array_agg(seat_id) filter (where not (state = 'available'
                                      or (state = 'held' and hold_expires_at <= clock_timestamp()))),
           array_agg(hold_id) filter (where hold_id is not null),
           coalesce(sum(price_cents), 0)::bigint
    into v_found, v_busy, v_prev, a.total_cents
    from (select seat_id, state, hold_id, hold_expires_at, price_cents from seats
          where event_id = a.event_id and seat_id = any(v_seats)
          order by seat_id for update) locked;
    if coalesce(cardinality(v_found), 0) <> cardinality(v_seats) then
        a.outcome := 'unknown';
        a.seats := array_to_json(array(select unnest(v_seats) except select unnest(v_found)
                                  order by 1))::text;
        return a;
    end if;
    if cardinality(v_busy) > 0 then
        a.outcome := 'taken';
        a.seats := array_to_json(v_busy)::text;
        return a;
    end if;
    return fg_take(p_session, v_seats, coalesce(v_prev, '{}'), p_hold_id, p_receipt,
                   h.ttl_ms, h.max_hold_ms, a);
end $$;

-- General admission: `p_quantity` free seats of a section, whichever. SKIP LOCKED: buyers
-- racing for a section each take different free rows at once instead of queueing behind the
-- same first rows. Free `available` rows come first, straight from seats_free_by_section in
-- seat order; rows of expired holds only when those run short.
create function fg_hold_ga(p_session text, p_section text, p_quantity integer, p_hold_id text,
                           p_receipt text)
returns fg_hold_answer language plpgsql as $$
declare
    a fg_hold_answer;
    h record;
    v_seats text[];
    v_more text[];
    v_prev text[];
begin
    select * into h from fg_holder(p_session, p_quantity, a);
    a := h.a;
    if a.outcome is not null then
        return a;
    end if;
    v_seats := array(select seat_id from seats
                     where event_id = a.event_id and section = p_section and state = 'available'
                     order by seat_id limit p_quantity for update skip locked);
    if cardinality(v_seats) < p_quantity then
        v_more := array(select seat_id from seats
                        where event_id = a.event_id and section = p_section and state = 'held'
                          and hold_expires_at <= clock_timestamp()
                        order by seat_id limit p_quantity - cardinality(v_seats)
                        for update skip locked);
        v_seats := v_seats || v_more;
    end if;
    if cardinality(v_seats) < p_quantity then
        a.outcome := 'short';
        return a;
    end if;
    v_seats := array(select unnest(v_seats) order by 1);
    select array_agg(hold_id) filter (where hold_id is not null), coalesce(sum(price_cents), 0)::bigint
    into v_prev, a.total_cents
    from seats where event_id = a.event_id and seat_id = any(v_seats);
    return fg_take(p_session, v_seats, coalesce(v_prev, '{}'), p_hold_id, p_receipt,
                   h.ttl_ms, h.max_hold_ms, a);
end $$;

-- General admission reads a section's free rows in seat order. Through the primary key (what
-- the generic plan picked) it walks past every taken seat at the front of the event; this
-- partial index holds only the free rows, so the read stops at the quantity. A row leaving
-- `available` adds no entry here.
create index seats_free_by_section on seats (event_id, section, seat_id) where state = 'available';

-- The seats indexes and HOT updates. Every hold, payment and release changes `state` and
-- `hold_id` (and a hold `hold_expires_at`), so an index on any of them makes every seat
-- update a non-HOT one that adds an entry to each index. They stay, each for a read that
-- would otherwise scan an event's seats:
--   seats_by_section_state  the seat map's counts by state, and general admission's rows of
--                           expired holds;
--   seats_free_by_section   general admission's free rows (above);
--   seats_by_hold           releasing, paying and confirming a hold finds its seats by hold_id;
--   seats_held_expiry       the sweeper's expired holds.
-- Named seats are only ever reached through the primary key (the plans test holds every hot
-- statement to that), so the dead entries these indexes collect cost vacuum work, not holds.

-- Begin payment in one round trip: the owner's live hold moves to `paying` with its attempt,
-- the log line and the `authorize` job, all or nothing. `outcome` is `paying`, or why not:
-- not_found, not_owner, in_progress (a payment is running), expired. This commit keeps the
-- session's synchronous_commit (on): it is the first financial record, and flushing it flushes
-- the hold before it too.
create type fg_paying_answer as (
    outcome        text,
    event_id       text,
    amount_cents   bigint,
    currency       text,
    created_ms     bigint,
    resolve_by_ms  bigint,
    abandon_at_ms  bigint
);

create function fg_begin_payment(p_session text, p_hold text, p_attempt text, p_method text,
                                 p_return_url text)
returns fg_paying_answer language plpgsql as $$
declare
    a fg_paying_answer;
    h record;
    v_seats text[];
    v_now timestamptz := clock_timestamp();
    v_paying integer;
begin
    select hd.session_id, hd.event_id, hd.state, hd.seats, hd.total_cents,
           hd.expires_at <= clock_timestamp() as expired, e.currency,
           e.resolve_s::bigint as resolve_s, e.abandon_s::bigint as abandon_s
    into h
    from holds hd join events e on e.event_id = hd.event_id
    where hd.hold_id = p_hold;
    if not found then
        a.outcome := 'not_found';
        return a;
    elsif h.session_id <> p_session then
        a.outcome := 'not_owner';
        return a;
    elsif h.state = 'paying' then
        a.outcome := 'in_progress';
        return a;
    elsif h.state <> 'held' or h.expired then
        a.outcome := 'expired';
        return a;
    end if;
    v_seats := array(select jsonb_array_elements_text(h.seats::jsonb));
    -- Locked in seat order, as every hold and transition locks them, and judged again under
    -- the row locks by the clock at this instant: a rival may take an expired seat, so only
    -- rows still ours and unexpired may enter `paying`. (Judged here rather than in the
    -- update's where clause: that predicate made the generic plan read the expiry index.)
    select count(*) filter (where hold_id = p_hold and state = 'held'
                            and hold_expires_at > clock_timestamp())
    into v_paying
    from (select hold_id, state, hold_expires_at from seats
          where event_id = h.event_id and seat_id = any(v_seats)
          order by seat_id for update) locked;
    if v_paying <> cardinality(v_seats) then
        raise exception 'hold expired under its row locks' using errcode = 'FG002';
    end if;
    update seats set state = 'paying', payment_attempt_id = p_attempt, version = version + 1
    where event_id = h.event_id and seat_id = any(v_seats);
    update holds set state = 'paying' where hold_id = p_hold and state = 'held';
    insert into payment_attempts (attempt_id, hold_id, event_id, amount_cents, currency,
                                  payment_method, state, created_at, resolve_by, abandon_at,
                                  return_url)
    values (p_attempt, p_hold, h.event_id, h.total_cents, h.currency, p_method, 'pending', v_now,
            v_now + h.resolve_s * interval '1 second', v_now + h.abandon_s * interval '1 second',
            p_return_url);
    insert into reservation_events (event_id, kind, hold_id, attempt_id, seats)
    values (h.event_id, 'PaymentInitiated', p_hold, p_attempt, h.seats);
    insert into outbox (kind, event_id, attempt_id, hold_id, payload)
    values ('authorize', h.event_id, p_attempt, p_hold,
            jsonb_build_object('attempt_id', p_attempt, 'hold_id', p_hold,
                               'amount_cents', h.total_cents, 'currency', h.currency,
                               'payment_method', p_method)::text);
    a.outcome := 'paying';
    a.event_id := h.event_id;
    a.amount_cents := h.total_cents;
    a.currency := h.currency;
    a.created_ms := fg_ms(v_now);
    a.resolve_by_ms := fg_ms(v_now + h.resolve_s * interval '1 second');
    a.abandon_at_ms := fg_ms(v_now + h.abandon_s * interval '1 second');
    return a;
end $$;
