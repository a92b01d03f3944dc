-- The stadium map's versions without the event's counter row. Every hold of an event bumped
-- that one row and kept its lock to the commit, so in the storm each hold waited for the
-- previous one's commit. A seat change is now stamped with its transaction's id instead, and
-- a reader's version is the oldest transaction still running when it reads, less one: every
-- transaction below it has ended, so every change stamped at or below the version is already
-- visible, and "the seats stamped above V" still holds every change since V (a change that
-- committed early may be sent twice, which a reader applies twice harmlessly). Transaction ids
-- are one 64-bit count for the whole server, and on the same server every counter value
-- issued before is below the ids issued since, so a version a page read before this migration
-- still asks for every change after it.
alter table events drop column availability_version;

-- `fg_take_locked` of 0016, stamping the taken seats with the transaction's id.
create or replace function fg_take_locked(p_session text, p_seats text[], p_prev text[],
                                          p_hold_id text, p_receipt text, p_ttl_ms bigint,
                                          p_max_hold_ms bigint, inout a fg_hold_answer)
language plpgsql as $$
declare
    v_now timestamptz := clock_timestamp();
    -- The same compact text serde writes (ids never need escaping).
    v_json text := '["' || array_to_string(p_seats, '","') || '"]';
    v_taken integer;
begin
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
    -- Only the key in the where clause: the caller judged these rows free under their row
    -- locks (see 0006 for why repeating that predicate here hurt the plan).
    update seats set state = 'held', hold_id = p_hold_id,
                     hold_expires_at = v_now + p_ttl_ms * interval '1 millisecond',
                     payment_attempt_id = null, version = version + 1,
                     availability_version = pg_current_xact_id()::text::bigint
    where event_id = a.event_id and seat_id = any(p_seats);
    get diagnostics v_taken = row_count;
    if v_taken <> cardinality(p_seats) then
        -- Cannot happen under the row locks taken before; if it did, nothing may stay written.
        raise exception 'seats changed under their row locks' using errcode = 'FG001';
    end if;
    -- A hold is working state (see 0006): its commit does not wait for the disk unless the
    -- operator set `floodgate.durable_holds = on`.
    if current_setting('floodgate.durable_holds', true) is distinct from 'on' then
        perform set_config('synchronous_commit', 'off', true);
    end if;
    a.outcome := 'held';
    a.seats := v_json;
    a.created_ms := fg_ms(v_now);
    a.expires_ms := fg_ms(v_now + p_ttl_ms * interval '1 millisecond');
    a.max_expires_ms := fg_ms(v_now + p_max_hold_ms * interval '1 millisecond');
end $$;
