-- A key whose first request never finished (its process died) is not held forever: the
-- claim carries a lease, and a retry after it takes the key over with a conditional update.
-- Null on keys written before leases existed; those count from created_at plus a minute.
-- Unix milliseconds, as every time on SQLite.
alter table idempotency_keys add column lease_until integer;
