-- Losers of a taken seat are answered by a plain read. `fg_hold` turned them away before any
-- lock or write, but still inside a PL/pgSQL call; the store now sends one statement whose
-- first part is that read, and only a buyer whose seats all look free reaches the function
-- below (same checks, locks and writes as `fg_hold`, without repeating the read). Winning is
-- still decided under the row locks alone: a seat seen free may be taken a moment later, and
-- the function answers `taken` then.

-- `fg_take` for seats the caller has locked and judged free: `p_seats` (sorted) for the
-- session, the holds those seats were taken over from, the hold row and its log line.
create function fg_take_locked(p_session text, p_seats text[], p_prev text[], p_hold_id text,
                               p_receipt text, p_ttl_ms bigint, p_max_hold_ms bigint,
                               inout a fg_hold_answer)
language plpgsql as $$
declare
    v_now timestamptz := clock_timestamp();
    -- The same compact text serde writes (ids never need escaping).
    v_json text := '["' || array_to_string(p_seats, '","') || '"]';
    v_taken integer;
begin
    -- Only the key in the where clause: the caller judged these rows free under their row
    -- locks. Repeating that predicate here let the planner read seats_by_section_state (every
    -- `available` and `held` entry of the event) whenever its estimates for the key went
    -- wrong, as on a freshly loaded event: 20 ms for a four-seat hold instead of 0.1 ms.
    update seats set state = 'held', hold_id = p_hold_id,
                     hold_expires_at = v_now + p_ttl_ms * interval '1 millisecond',
                     payment_attempt_id = null, version = version + 1
    where event_id = a.event_id and seat_id = any(p_seats);
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

create function fg_hold_free(p_session text, p_seats text, p_hold_id text, p_receipt text)
returns fg_hold_answer language plpgsql as $$
declare
    v_seats text[] := array(select jsonb_array_elements_text(p_seats::jsonb));
    a fg_hold_answer;
    h record;
    v_busy text[];
    v_found text[];
    v_prev text[];
begin
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
    return fg_take_locked(p_session, v_seats, coalesce(v_prev, '{}'), p_hold_id, p_receipt,
                          h.ttl_ms, h.max_hold_ms, a);
end $$;
