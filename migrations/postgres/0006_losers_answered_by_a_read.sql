-- Losers of a taken seat are answered by a plain read. `fg_hold` turned them away before any
-- lock or write, but still inside a PL/pgSQL call; the store now sends one statement whose
-- first part is that read, and only a buyer whose seats all look free reaches the function
-- below (same checks, locks and writes as `fg_hold`, without repeating the read). Winning is
-- still decided under the row locks alone: a seat seen free may be taken a moment later, and
-- the function answers `taken` then.
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
    return fg_take(p_session, v_seats, coalesce(v_prev, '{}'), p_hold_id, p_receipt,
                   h.ttl_ms, h.max_hold_ms, a);
end $$;
