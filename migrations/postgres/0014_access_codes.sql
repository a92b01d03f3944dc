-- The organizer's night: who may join before the general opening, one place per person, and
-- the priority lane's share of the outflow.

-- The share of offers the priority lane may take, in thousandths (0 = none, 1000 = all), read
-- with the other live controls on every tick.
alter table admission_controls
    add column priority_permille integer not null default 0
        check (priority_permille between 0 and 1000);

-- Who may join: `open` (anyone), `presale` (a code until general_opens_at), `invite_only`
-- (always a code); and the organizer's identity key, when buyers must prove who they are.
-- No row means open, with no identity check.
create table event_access (
    event_id          text primary key references events (event_id),
    access            text not null default 'open'
        check (access in ('open', 'presale', 'invite_only')),
    general_opens_at  timestamptz,
    identity_alg      text check (identity_alg in ('HS256', 'ES256', 'RS256')),
    -- The shared secret (HS256) or the public key PEM (ES256, RS256); never returned.
    identity_key      text,
    identity_required boolean not null default false,
    updated_at        timestamptz not null default clock_timestamp()
);

-- Presale and access codes. A use is taken by one conditional update (uses_left > 0 and the
-- window open), so a one-use code shared between two tabs admits one of them.
create table access_codes (
    event_id   text not null references events (event_id),
    code       text not null,
    uses       integer not null check (uses > 0),
    uses_left  integer not null check (uses_left >= 0),
    starts_at  timestamptz,
    ends_at    timestamptz,
    lane       text not null default 'general' check (lane in ('general', 'priority')),
    created_at timestamptz not null default clock_timestamp(),
    primary key (event_id, code)
);
