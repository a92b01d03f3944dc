-- General admission, each picked row read once. `fg_hold_ga` locked the free rows, read them
-- again for their prices and previous holds, and took them with `fg_take`, whose conditional
-- update could be planned over every `available` and `held` entry of the event. Here the
-- locking read (SKIP LOCKED, free `available` rows first from seats_free_by_section, rows of
-- expired holds only when those run short) brings the prices and previous holds along, and
-- `fg_take_locked` updates by the key alone. `short` means the same as before: too few free
-- unlocked rows this time, and the store counts before it says sold out.
create function fg_hold_ga_locked(p_session text, p_section text, p_quantity integer,
                                  p_hold_id text, p_receipt text)
returns fg_hold_answer language plpgsql as $$
declare
    a fg_hold_answer;
    h record;
    r record;
    v_seats text[] := '{}';
    v_prev text[] := '{}';
    v_total bigint := 0;
begin
    select * into h from fg_holder(p_session, p_quantity, a);
    a := h.a;
    if a.outcome is not null then
        return a;
    end if;
    for r in
        select seat_id, price_cents from seats
        where event_id = a.event_id and section = p_section and state = 'available'
        order by seat_id limit p_quantity for update skip locked
    loop
        v_seats := v_seats || r.seat_id;
        v_total := v_total + r.price_cents;
    end loop;
    if cardinality(v_seats) < p_quantity then
        for r in
            select seat_id, hold_id, price_cents from seats
            where event_id = a.event_id and section = p_section and state = 'held'
              and hold_expires_at <= clock_timestamp()
            order by seat_id limit p_quantity - cardinality(v_seats) for update skip locked
        loop
            v_seats := v_seats || r.seat_id;
            v_prev := v_prev || r.hold_id;
            v_total := v_total + r.price_cents;
        end loop;
    end if;
    if cardinality(v_seats) < p_quantity then
        a.outcome := 'short';
        return a;
    end if;
    v_seats := array(select unnest(v_seats) order by 1);
    a.total_cents := v_total;
    return fg_take_locked(p_session, v_seats, v_prev, p_hold_id, p_receipt, h.ttl_ms,
                          h.max_hold_ms, a);
end $$;
