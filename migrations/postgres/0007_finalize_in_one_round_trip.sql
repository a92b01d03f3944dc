-- Finalize (paying → sold) in one round trip: the same reads, seat locks and writes as the
-- store's statement-by-statement finalize, run server-side. The commit keeps the session's
-- synchronous_commit (on): an order is a financial record.
--
-- `outcome`: confirmed (the order's columns follow, made now or by an earlier call: a repeat
-- is a no-op), lost (the seats no longer name this hold and attempt: nothing was written),
-- no_attempt, no_hold.
create type fg_finalize_answer as (
    outcome         text,
    order_id        text,
    event_id        text,
    hold_id         text,
    attempt_id      text,
    seats           text,
    total_cents     bigint,
    status          text,
    payment_status  text,
    created_at_ms   bigint
);

create function fg_order_of_attempt(p_attempt text) returns fg_finalize_answer
language sql stable as $$
    select 'confirmed', order_id, event_id, hold_id, attempt_id, seats, total_cents, status,
           payment_status, fg_ms(created_at)
    from orders where attempt_id = p_attempt
$$;

create function fg_finalize(p_attempt text, p_provider_payment_id text, p_order text)
returns fg_finalize_answer language plpgsql as $$
declare
    a fg_finalize_answer;
    t record;
    h record;
    v_seats text[];
    v_ours integer;
begin
    select attempt_id, hold_id, amount_cents into t
    from payment_attempts where attempt_id = p_attempt;
    if not found then
        a.outcome := 'no_attempt';
        return a;
    end if;
    select hold_id, session_id, event_id, seats, total_cents into h
    from holds where hold_id = t.hold_id;
    if not found then
        a.outcome := 'no_hold';
        return a;
    end if;
    a := fg_order_of_attempt(p_attempt);
    if a.outcome is not null then
        return a;
    end if;
    v_seats := array(select jsonb_array_elements_text(h.seats::jsonb));
    -- Locked in seat order, as every transition locks them, then judged: all of the hold's
    -- seats or none, so a partial sale is never written.
    select count(*) filter (where hold_id = h.hold_id and payment_attempt_id = p_attempt
                            and state = 'paying')
    into v_ours
    from (select hold_id, payment_attempt_id, state from seats
          where event_id = h.event_id and seat_id = any(v_seats)
          order by seat_id for update) locked;
    if v_ours <> cardinality(v_seats) then
        -- A concurrent finalize of the same attempt may have just won (its commit released
        -- the seat locks we waited on): that is not a loss.
        a := fg_order_of_attempt(p_attempt);
        if a.outcome is null then
            a.outcome := 'lost';
        end if;
        return a;
    end if;
    update seats set state = 'sold', order_id = p_order, version = version + 1
    where event_id = h.event_id and seat_id = any(v_seats);
    insert into orders (order_id, event_id, hold_id, attempt_id, seats, total_cents, status,
                        payment_status)
    values (p_order, h.event_id, h.hold_id, p_attempt, h.seats, h.total_cents, 'confirmed',
            'authorized');
    -- The second fence: sales is unique on (event_id, seat_id) whatever the seats row says.
    insert into sales (event_id, seat_id, order_id)
    select h.event_id, s, p_order from unnest(v_seats) s;
    update holds set state = 'confirmed', order_id = p_order, ended_at = clock_timestamp()
    where hold_id = h.hold_id;
    update payment_attempts
    set state = 'confirmed', provider_payment_id = coalesce(p_provider_payment_id, provider_payment_id),
        updated_at = clock_timestamp()
    where attempt_id = p_attempt;
    insert into reservation_events (event_id, kind, hold_id, attempt_id, order_id, seats)
    values (h.event_id, 'ReservationConfirmed', h.hold_id, p_attempt, p_order, h.seats);
    insert into outbox (kind, event_id, attempt_id, hold_id, payload)
    values ('capture', h.event_id, p_attempt, h.hold_id,
            jsonb_build_object('attempt_id', p_attempt, 'order_id', p_order,
                               'amount_cents', t.amount_cents,
                               'provider_payment_id', p_provider_payment_id)::text);
    update admission_sessions set ended_at = clock_timestamp(), end_reason = 'confirmed'
    where session_id = h.session_id and ended_at is null;
    insert into outbox (kind, event_id, hold_id, payload)
    values ('session_ended', h.event_id, h.hold_id,
            jsonb_build_object('session_id', h.session_id, 'event_id', h.event_id,
                               'hold_id', h.hold_id, 'reason', 'confirmed')::text);
    return fg_order_of_attempt(p_attempt);
end $$;
