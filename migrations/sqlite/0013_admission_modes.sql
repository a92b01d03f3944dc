-- The organizer's emergency controls, read with the rest of the row on every tick:
--   mode             normal | pass_through (offer everyone, the cap judged at claim) |
--                    maintenance (joins refused with the message; places kept, offers paused)
--   on_backend_down  fail_closed (refuse while the queue backend is down) | fail_open (admit
--                    from the database alone, the cap judged by a conditional insert)
--   message_*        what every waiting page shows; null when there is none
alter table admission_controls add column mode text not null default 'normal'
    check (mode in ('normal', 'pass_through', 'maintenance'));
alter table admission_controls add column on_backend_down text not null default 'fail_closed'
    check (on_backend_down in ('fail_closed', 'fail_open'));
alter table admission_controls add column message_text text
    check (length(message_text) <= 280);
alter table admission_controls add column message_level text
    check (message_level in ('info', 'warning'));
