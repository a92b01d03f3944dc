-- The organizer's night: who may join before the general opening, one place per person, and
-- the priority lane's share of the outflow. Times are integer milliseconds.

-- The share of offers the priority lane may take, in thousandths (0 = none, 1000 = all).
alter table admission_controls add column priority_permille integer not null default 0
    check (priority_permille between 0 and 1000);

-- Who may join: `open`, `presale` (a code until general_opens_at), `invite_only` (always a
-- code); and the organizer's identity key. No row means open, with no identity check.
create table event_access (
    event_id          text primary key references events (event_id),
    access            text not null default 'open'
        check (access in ('open', 'presale', 'invite_only')),
    general_opens_at  integer,
    identity_alg      text check (identity_alg in ('HS256', 'ES256', 'RS256')),
    identity_key      text,
    identity_required integer not null default 0,
    updated_at        integer not null default (cast(unixepoch('subsec') * 1000 as integer))
);

-- Presale and access codes; a use is taken by one conditional update.
create table access_codes (
    event_id   text not null references events (event_id),
    code       text not null,
    uses       integer not null check (uses > 0),
    uses_left  integer not null check (uses_left >= 0),
    starts_at  integer,
    ends_at    integer,
    lane       text not null default 'general' check (lane in ('general', 'priority')),
    created_at integer not null default (cast(unixepoch('subsec') * 1000 as integer)),
    primary key (event_id, code)
);
