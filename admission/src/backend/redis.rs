//! The queue in Redis, shared by every gateway instance: each step one Lua script over the
//! event's keys (one `{hash tag}`, so a Cluster keeps them in one slot), judged by Redis `TIME`.

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::{RedisResult, Script};
use serde::Deserialize;

use super::{
    BackendError, CLAIM_SETTLE_MS, CLAIM_SLOT_MS, ClaimStart, JoinArgs, JoinOutcome,
    PASS_THROUGH_BATCH, RecoverArgs, TickArgs, TickOutcome, TicketArgs, TicketState, tolerance_ms,
};
use crate::clock::UnixMs;

macro_rules! script {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("lua/prelude.lua"),
            include_str!(concat!("lua/", $file))
        ))
    };
}

#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

struct Scripts {
    join: Script,
    ticket: Script,
    claim_start: Script,
    claim_done: Script,
    tick: Script,
    recover: Script,
}

pub(crate) struct RedisQueue {
    conn: Conn,
    /// For the pub/sub listener (single node; a Cluster relies on ticks alone).
    client: Option<redis::Client>,
    scripts: Scripts,
}

/// How long a Redis reply may take before the call fails (and the caller retries or sheds).
const REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// The keys of one event, in the order the scripts' prelude names them.
fn keys(event: &str) -> [String; 20] {
    let names = [
        "ep", "seq", "cur", "z", "offers", "pending", "adm", "rr", "tk", "served", "tat", "lapsed",
        "grace", "credit", "pqf", "floor", "pseq", "pz", "pcarry", "pf",
    ];
    names.map(|n| format!("{{fg:{event}}}:{n}"))
}

/// A sorted-set score as Redis renders it; empty: none yet.
fn score(rendered: &str) -> Result<Option<f64>, BackendError> {
    if rendered.is_empty() {
        return Ok(None);
    }
    rendered
        .parse::<f64>()
        .map(Some)
        .map_err(|e| BackendError::Reply(e.to_string()))
}

/// The channel a tick announces on, so other instances tick (and refresh) at once.
pub(crate) fn news_channel(event: &str) -> String {
    format!("{{fg:{event}}}:news")
}

#[derive(Deserialize)]
struct Lost {
    #[serde(default)]
    lost: bool,
}

fn parse<T: for<'de> Deserialize<'de>>(reply: &str) -> Result<T, BackendError> {
    if serde_json::from_str::<Lost>(reply).is_ok_and(|l| l.lost) {
        return Err(BackendError::Lost);
    }
    serde_json::from_str(reply).map_err(|e| BackendError::Reply(format!("{e}: {reply}")))
}

impl RedisQueue {
    /// `url`: one `redis://` (`rediss://` for TLS) URL, or several comma-separated = a Redis
    /// Cluster. `ca_pem`: the CA certificates a `rediss://` server is verified with instead of
    /// the platform's roots (Redis takes one trust store).
    pub(crate) async fn connect(url: &str, ca_pem: Option<&[u8]>) -> RedisResult<Self> {
        let urls: Vec<&str> = url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        let certs = ca_pem
            .filter(|_| urls.iter().any(|u| u.starts_with("rediss://")))
            .map(|pem| redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem.to_vec()),
            });
        let (conn, client) = if urls.len() > 1 {
            let mut builder = redis::cluster::ClusterClient::builder(urls);
            if let Some(certs) = certs {
                builder = builder.certs(certs);
            }
            let client = builder.build()?;
            (Conn::Cluster(client.get_async_connection().await?), None)
        } else {
            let client = match certs {
                Some(certs) => redis::Client::build_with_tls(url, certs)?,
                None => redis::Client::open(url)?,
            };
            // redis-rs gives up on a reply after 500 ms by default: a gateway short of CPU then
            // fails every tick and join although Redis answered in microseconds (seen in the
            // soak). The overload layer, not this timeout, bounds what waits.
            let config = redis::aio::ConnectionManagerConfig::new()
                .set_response_timeout(Some(REPLY_TIMEOUT))
                .set_connection_timeout(Some(REPLY_TIMEOUT));
            let conn =
                Conn::Single(ConnectionManager::new_with_config(client.clone(), config).await?);
            (conn, Some(client))
        };
        Ok(RedisQueue {
            conn,
            client,
            scripts: Scripts {
                join: script!("join.lua"),
                ticket: script!("ticket.lua"),
                claim_start: script!("claim_start.lua"),
                claim_done: script!("claim_done.lua"),
                tick: script!("tick.lua"),
                recover: script!("recover.lua"),
            },
        })
    }

    async fn run(
        &self,
        script: &Script,
        event: &str,
        now: Option<UnixMs>,
        args: &[String],
    ) -> Result<String, BackendError> {
        let mut inv = script.prepare_invoke();
        for k in keys(event) {
            inv.key(k);
        }
        inv.arg(now.unwrap_or(-1));
        for a in args {
            inv.arg(a);
        }
        let reply: String = match self.conn.clone() {
            Conn::Single(mut c) => inv.invoke_async(&mut c).await?,
            Conn::Cluster(mut c) => inv.invoke_async(&mut c).await?,
        };
        Ok(reply)
    }

    /// News of other instances' ticks (every event's channel), if this is a single node.
    pub(crate) async fn news(&self) -> Option<redis::aio::PubSubStream> {
        let client = self.client.as_ref()?;
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.psubscribe("{fg:*}:news").await?;
            RedisResult::Ok(pubsub.into_on_message())
        };
        match subscribed.await {
            Ok(stream) => Some(stream),
            Err(error) => {
                tracing::warn!(%error, "pub/sub unavailable; ticks alone carry the news");
                None
            }
        }
    }

    /// A `PING`, for readiness: the queue backend answers within the reply timeout.
    pub(crate) async fn ping(&self) -> Result<(), BackendError> {
        let cmd = redis::cmd("PING");
        let reply = async {
            match self.conn.clone() {
                Conn::Single(mut c) => cmd.query_async::<String>(&mut c).await,
                Conn::Cluster(mut c) => cmd.query_async::<String>(&mut c).await,
            }
        };
        match tokio::time::timeout(REPLY_TIMEOUT, reply).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(error.into()),
            Err(_) => Err(BackendError::Reply("no answer to PING in time".into())),
        }
    }

    /// `INCR` of the join sequence alone (see `Admission::fast_join`).
    pub(crate) async fn incr_seq(&self, event: &str) -> Result<u64, BackendError> {
        let mut cmd = redis::cmd("INCR");
        cmd.arg(format!("{{fg:{event}}}:seq"));
        Ok(match self.conn.clone() {
            Conn::Single(mut c) => cmd.query_async(&mut c).await?,
            Conn::Cluster(mut c) => cmd.query_async(&mut c).await?,
        })
    }

    /// `HEXISTS` on the keyed joins: a place a key already holds.
    pub(crate) async fn has_key(&self, event: &str, key: &str) -> Result<bool, BackendError> {
        let mut cmd = redis::cmd("HEXISTS");
        cmd.arg(format!("{{fg:{event}}}:tk")).arg(key);
        Ok(match self.conn.clone() {
            Conn::Single(mut c) => cmd.query_async(&mut c).await?,
            Conn::Cluster(mut c) => cmd.query_async(&mut c).await?,
        })
    }

    pub(crate) async fn join(
        &self,
        event: &str,
        args: JoinArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<JoinOutcome, BackendError> {
        let argv = [
            args.opens_at_ms.to_string(),
            args.key.unwrap_or("").to_owned(),
            args.pre_score.to_string(),
            if args.priority { "1" } else { "0" }.to_owned(),
        ];
        let mut out: JoinOutcome = parse(&self.run(&self.scripts.join, event, now, &argv).await?)?;
        // The script counts the lane (Lua's JSON would round a number past 2^50).
        if out.p {
            out.seq += crate::entry::PRIORITY_BASE;
        }
        Ok(out)
    }

    pub(crate) async fn ticket(
        &self,
        event: &str,
        args: TicketArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<(TicketState, UnixMs), BackendError> {
        #[derive(Deserialize)]
        struct Reply {
            s: String,
            #[serde(default)]
            ahead: u64,
            #[serde(default)]
            exp: i64,
            now: i64,
        }
        let argv = [
            args.seq.to_string(),
            if args.pre { "1" } else { "0" }.to_owned(),
            args.score.to_string(),
            args.epoch.to_owned(),
            if args.never_offered { "1" } else { "0" }.to_owned(),
        ];
        let r: Reply = parse(&self.run(&self.scripts.ticket, event, now, &argv).await?)?;
        let state = match r.s.as_str() {
            "waiting" => TicketState::Waiting { ahead: r.ahead },
            "offered" => TicketState::Offered { expires_ms: r.exp },
            "claimed" => TicketState::Claimed,
            "lapsed" => TicketState::Lapsed,
            "behind" => TicketState::Behind,
            other => return Err(BackendError::Reply(other.to_owned())),
        };
        Ok((state, r.now))
    }

    pub(crate) async fn claim_start(
        &self,
        event: &str,
        seq: u64,
        now: Option<UnixMs>,
    ) -> Result<ClaimStart, BackendError> {
        #[derive(Deserialize)]
        struct Reply {
            r: String,
        }
        let argv = [seq.to_string(), CLAIM_SLOT_MS.to_string()];
        let r: Reply = parse(
            &self
                .run(&self.scripts.claim_start, event, now, &argv)
                .await?,
        )?;
        Ok(match r.r.as_str() {
            "moved" => ClaimStart::Moved,
            "claimed" => ClaimStart::Claimed,
            _ => ClaimStart::NotOffered,
        })
    }

    pub(crate) async fn claim_done(
        &self,
        event: &str,
        seq: u64,
        now: Option<UnixMs>,
    ) -> Result<(), BackendError> {
        let argv = [seq.to_string(), CLAIM_SETTLE_MS.to_string()];
        self.run(&self.scripts.claim_done, event, now, &argv)
            .await
            .map(|_| ())
    }

    pub(crate) async fn tick(
        &self,
        event: &str,
        args: TickArgs,
        now: Option<UnixMs>,
    ) -> Result<TickOutcome, BackendError> {
        #[derive(Deserialize)]
        struct Reply {
            offered: String,
            served: u64,
            cursor: u64,
            ahead: u64,
            seq: u64,
            open_offers: u64,
            claiming: u64,
            lapsed: u64,
            epoch: String,
            now: i64,
            /// Redis's own rendering of the scores: a JSON number would lose digits.
            pq_through: String,
            p_through: String,
            pseq: u64,
            pahead: u64,
        }
        let argv = [
            args.opens_at_ms.to_string(),
            args.rate_per_min.to_string(),
            args.max_active.to_string(),
            args.active.to_string(),
            args.offer_ms.to_string(),
            if args.hold { "1" } else { "0" }.to_owned(),
            tolerance_ms(args.rate_per_min).to_string(),
            args.priority_permille.to_string(),
            super::CARRY_START.to_string(),
            if args.pass_through { "1" } else { "0" }.to_owned(),
            PASS_THROUGH_BATCH.to_string(),
        ];
        let r: Reply = parse(&self.run(&self.scripts.tick, event, now, &argv).await?)?;
        let offered = r
            .offered
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<u64>()
                    .map_err(|e| BackendError::Reply(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !offered.is_empty() {
            self.publish(event, r.served).await;
        }
        Ok(TickOutcome {
            offered,
            served: r.served,
            cursor: r.cursor,
            ahead: r.ahead,
            seq: r.seq,
            open_offers: r.open_offers,
            claiming: r.claiming,
            lapsed: r.lapsed,
            epoch: r.epoch,
            now: r.now,
            pseq: r.pseq,
            pahead: r.pahead,
            pq_through: score(&r.pq_through)?,
            p_through: score(&r.p_through)?,
        })
    }

    /// Pub/sub only speeds the news; a lost message costs at most one tick interval.
    async fn publish(&self, event: &str, served: u64) {
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(news_channel(event)).arg(served);
        let res: RedisResult<i64> = match self.conn.clone() {
            Conn::Single(mut c) => cmd.query_async(&mut c).await,
            Conn::Cluster(mut c) => cmd.query_async(&mut c).await,
        };
        if let Err(error) = res {
            tracing::debug!(%error, "publish failed");
        }
    }

    pub(crate) async fn recover(
        &self,
        event: &str,
        args: RecoverArgs<'_>,
        now: Option<UnixMs>,
    ) -> Result<bool, BackendError> {
        #[derive(Deserialize)]
        struct Reply {
            created: bool,
        }
        let argv = [
            args.epoch.to_owned(),
            args.seq_floor.to_string(),
            args.served_floor.to_string(),
            args.grace_ms.to_string(),
            args.opens_at_ms.to_string(),
            args.fifo_floor.to_string(),
            args.pq_floor.map(|f| f.to_string()).unwrap_or_default(),
            args.p_floor.map(|f| f.to_string()).unwrap_or_default(),
        ];
        let r: Reply = parse(&self.run(&self.scripts.recover, event, now, &argv).await?)?;
        Ok(r.created)
    }
}
