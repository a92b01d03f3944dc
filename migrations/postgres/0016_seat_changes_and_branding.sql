-- The stadium map reads what changed since the version it holds instead of the whole map.
-- Each event counts the changes of its seats' availability (available ⇄ taken, as buyers see
-- it); every transaction that changes some bumps the count once and stamps those seats with
-- the new value. The bump takes the event's counter row lock and keeps it until commit, so
-- versions commit in their own order: a reader that saw version V has seen every change up to
-- V, and "the seats stamped above V" is exactly what changed since. Every writer takes its
-- seat locks first and the counter last, so the counter never waits behind a seat lock.
alter table events
    add column availability_version bigint not null default 0,
    -- The organizer's look of the pages (JSON: logo_url, colors, heading, text), validated at
    -- the edge; shown as text, never as markup.
    add column branding text,
    -- JSON array of the origins allowed to frame the event's page (the embed mode).
    add column frame_ancestors text;
alter table seats add column availability_version bigint not null default 0;

-- `fg_take_locked` of 0006, stamping the taken seats. The hold row and its log line are
-- written before the counter is bumped, so the event's counter is held for the last update
-- and the commit only.
create or replace function fg_take_locked(p_session text, p_seats text[], p_prev text[],
                                          p_hold_id text, p_receipt text, p_ttl_ms bigint,
                                          p_max_hold_ms bigint, inout a fg_hold_answer)
language plpgsql as $$
declare
    v_now timestamptz := clock_timestamp();
    -- The same compact text serde writes (ids never need escaping).
    v_json text := '["' || array_to_string(p_seats, '","') || '"]';
    v_taken integer;
    v_version bigint;
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
    update events set availability_version = availability_version + 1
    where event_id = a.event_id
    returning availability_version into v_version;
    -- Only the key in the where clause: the caller judged these rows free under their row
    -- locks (see 0006 for why repeating that predicate here hurt the plan).
    update seats set state = 'held', hold_id = p_hold_id,
                     hold_expires_at = v_now + p_ttl_ms * interval '1 millisecond',
                     payment_attempt_id = null, version = version + 1,
                     availability_version = v_version
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
