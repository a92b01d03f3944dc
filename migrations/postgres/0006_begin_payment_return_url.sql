-- Begin payment keeps its one round trip and records where the provider sends the buyer back
-- after authenticating (3-D Secure, migration 0005), in the same insert as the attempt.
drop function fg_begin_payment(text, text, text, text);

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
