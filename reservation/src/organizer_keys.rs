//! Named organizer keys with a role: an event's team (a viewer reads and exports, an operator
//! also steers admission, an admin does everything). Only a key's SHA-256 is kept; the key
//! itself is shown once to whoever made it.

use std::fmt;
use std::str::FromStr;

use crate::Error;
use crate::ids::{KeyId, generate, trusted};
use crate::store::Store;

/// The most keys an installation holds at once (the configured key not counted). The
/// database judges it: each key takes one of this many slots.
pub const MAX_KEYS: i64 = 100;
/// A key's name, in characters.
pub const KEY_NAME_CHARS: usize = 64;

/// What a key may do, each role including the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Stats, lists and exports.
    Viewer,
    /// Also admission: tune, pause, close, modes, the message.
    Operator,
    /// Also events, seats, codes, webhooks and keys.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is none of `viewer`, `operator`, `admin`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("role must be one of viewer, operator, admin")]
pub struct UnknownRole;

impl FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, UnknownRole> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or(UnknownRole)
    }
}

impl<'de> serde::Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A key as listed: never the key or its hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OrganizerKey {
    pub key_id: KeyId,
    pub name: String,
    pub role: Role,
    /// The key's last four characters, so a holder can tell which one they have.
    pub last4: String,
    pub created_at_ms: i64,
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    key_id: String,
    name: String,
    role: String,
    last4: String,
    created_at_ms: i64,
}

impl TryFrom<KeyRow> for OrganizerKey {
    type Error = Error;
    fn try_from(row: KeyRow) -> Result<Self, Error> {
        let role = row
            .role
            .parse()
            .map_err(|e: UnknownRole| Error::Storage(sqlx::Error::Decode(Box::new(e))))?;
        Ok(Self {
            key_id: trusted(row.key_id)?,
            name: row.name,
            role,
            last4: row.last4,
            created_at_ms: row.created_at_ms,
        })
    }
}

/// A key to add: its name, role, the hex SHA-256 of the key and its last four characters.
#[derive(Debug, Clone)]
pub struct NewKey<'a> {
    pub name: &'a str,
    pub role: Role,
    pub key_sha256: &'a str,
    pub last4: &'a str,
}

/// How many times an insert that lost a slot to a concurrent one tries the next free slot.
const SLOT_TRIES: u32 = 8;

impl Store {
    /// Adds a key in the lowest free slot; `KeyLimit` when all `MAX_KEYS` are taken. Two admins
    /// adding keys at once may pick the same slot: the unique slot refuses one, which tries
    /// again with the slots as they are now.
    pub async fn add_organizer_key(&self, key: &NewKey<'_>) -> Result<OrganizerKey, Error> {
        let key_id = generate("key");
        for _ in 0..SLOT_TRIES {
            let inserted = sqlx::query(self.sql(
                "insert into organizer_keys (key_id, slot, name, role, key_sha256, last4)
                 select $1, free.slot, $2, $3, $4, $5 from (
                     select case when not exists (select 1 from organizer_keys where slot = 1) then 1
                         else (select min(k.slot) + 1 from organizer_keys k where not exists
                               (select 1 from organizer_keys n where n.slot = k.slot + 1)) end as slot
                 ) free where free.slot <= $6",
            ))
            .bind(&key_id)
            .bind(key.name)
            .bind(key.role.as_str())
            .bind(key.key_sha256)
            .bind(key.last4)
            .bind(MAX_KEYS)
            .execute(&self.pool)
            .await;
            match inserted {
                Ok(done) if done.rows_affected() == 0 => return Err(Error::KeyLimit),
                Ok(_) => return self.organizer_key(&trusted(key_id)?).await,
                Err(sqlx::Error::Database(db))
                    if db.is_unique_violation() && !db.message().contains("key_sha256") =>
                {
                    continue;
                }
                Err(error) => return Err(error.into()),
            }
        }
        Err(Error::KeyLimit)
    }

    async fn organizer_key(&self, key: &KeyId) -> Result<OrganizerKey, Error> {
        sqlx::query_as::<_, KeyRow>(self.sql(
            "select key_id, name, role, last4, MS(created_at) as created_at_ms
             from organizer_keys where key_id = $1",
        ))
        .bind(key.as_str())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::KeyNotFound)?
        .try_into()
    }

    /// Every key, oldest first (at most `MAX_KEYS`).
    pub async fn organizer_keys(&self) -> Result<Vec<OrganizerKey>, Error> {
        sqlx::query_as::<_, KeyRow>(self.sql(
            "select key_id, name, role, last4, MS(created_at) as created_at_ms
             from organizer_keys order by created_at, key_id",
        ))
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .map(TryInto::try_into)
        .collect()
    }

    /// Every key with the hex SHA-256 it is recognised by (for the gateway's key book only).
    pub async fn organizer_key_hashes(&self) -> Result<Vec<(String, OrganizerKey)>, Error> {
        #[derive(sqlx::FromRow)]
        struct Hashed {
            key_sha256: String,
            #[sqlx(flatten)]
            key: KeyRow,
        }
        sqlx::query_as::<_, Hashed>(self.sql(
            "select key_sha256, key_id, name, role, last4, MS(created_at) as created_at_ms
             from organizer_keys",
        ))
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .map(|row| Ok((row.key_sha256, row.key.try_into()?)))
        .collect()
    }

    /// Revokes a key: its row goes, so it opens nothing from the next look-up on.
    pub async fn revoke_organizer_key(&self, key: &KeyId) -> Result<OrganizerKey, Error> {
        let revoked = sqlx::query_as::<_, KeyRow>(self.sql(
            "delete from organizer_keys where key_id = $1
             returning key_id, name, role, last4, MS(created_at) as created_at_ms",
        ))
        .bind(key.as_str())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::KeyNotFound)?;
        revoked.try_into()
    }
}
