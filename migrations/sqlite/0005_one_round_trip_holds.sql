-- General admission reads a section's free rows in seat order: this partial index holds only
-- the free rows, so the read stops at the quantity instead of walking past taken seats.
-- (PostgreSQL's 0005 also adds the server-side hold functions; SQLite is in-process, so its
-- store sends the statements itself.)
create index seats_free_by_section on seats (event_id, section, seat_id) where state = 'available';
