//! When each join reached the door: the proxy's own log of joins (`deploy/nginx/`, format
//! `floodgate_door`: `$msec $request_time $status $http_idempotency_key`, one line a request).
//! The queue owes arrival order from there on; before it, a load generator's own backlog (its
//! pool, its scheduling on a busy machine) is not the service's doing.

use std::collections::HashMap;
use std::path::Path;

/// The FIFO buyers found in the log, by when their first join reached the door.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DoorOrder {
    /// (door ms since the UNIX epoch, join sequence).
    pub arrivals: Vec<(u64, u64)>,
    /// FIFO buyers with no line in the log.
    pub missing: u64,
    /// Every logged buyer given a token: ms from its first join at the door to the answer that
    /// carried the token (the service's own share of arrival → token), sorted.
    pub door_to_token_ms: Vec<u64>,
}

/// One log line: when the request's first byte was read and when it was answered (ms since
/// the epoch), its status and key.
struct Line<'a> {
    door_ms: u64,
    answered_ms: u64,
    status: &'a str,
    key: &'a str,
}

fn parse(line: &str) -> Option<Line<'_>> {
    let mut fields = line.split(' ');
    let at_s: f64 = fields.next()?.parse().ok()?;
    let took_s: f64 = fields.next()?.parse().ok()?;
    let status = fields.next()?;
    let key = fields.next().filter(|k| !k.is_empty() && *k != "-")?;
    if fields.next().is_some() || !(at_s.is_finite() && took_s.is_finite()) {
        return None;
    }
    let ms = |s: f64| (s * 1000.0).round().max(0.0) as u64;
    Some(Line {
        door_ms: ms(at_s - took_s),
        answered_ms: ms(at_s),
        status,
        key,
    })
}

/// Matches `joined` (idempotency key, join sequence) to the log's first line for each key: a
/// retried join (shed, or its answer lost) arrived when its first try did.
pub fn order(log: &str, joined: &[(String, u64)]) -> DoorOrder {
    // Per key: the first arrival, and the first answer that gave a token.
    let mut seen: HashMap<&str, (u64, Option<u64>)> = HashMap::with_capacity(joined.len());
    for line in log.lines().filter_map(parse) {
        let token = (line.status == "201").then_some(line.answered_ms);
        let entry = seen.entry(line.key).or_insert((line.door_ms, token));
        entry.0 = entry.0.min(line.door_ms);
        entry.1 = match (entry.1, token) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    let mut found = DoorOrder {
        door_to_token_ms: seen
            .values()
            .filter_map(|&(door, token)| Some(token?.saturating_sub(door)))
            .collect(),
        ..DoorOrder::default()
    };
    found.door_to_token_ms.sort_unstable();
    for (key, seq) in joined {
        match seen.get(key.as_str()) {
            Some(&(at, _)) => found.arrivals.push((at, *seq)),
            None => found.missing += 1,
        }
    }
    found
}

impl DoorOrder {
    /// The door → token time at quantile `q` (nearest rank), `None` without any.
    pub fn door_to_token_at(&self, q: f64) -> Option<u64> {
        let n = self.door_to_token_ms.len();
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n.max(1));
        self.door_to_token_ms.get(rank - 1).copied()
    }
}

pub fn read(path: &Path, joined: &[(String, u64)]) -> anyhow::Result<DoorOrder> {
    let log = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("the door log {}: {e}", path.display()))?;
    Ok(order(&log, joined))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_the_time_its_first_byte_was_read() {
        let line = parse("1700000000.500 0.250 201 k1").expect("a line");
        assert_eq!(
            (line.door_ms, line.answered_ms, line.status, line.key),
            (1_700_000_000_250, 1_700_000_000_500, "201", "k1")
        );
        for torn in [
            "1700000000.500 0.250 201 -",
            "1700000000.500 0.250 201",
            "garbage",
            "1.0 0.1 201 k extra",
        ] {
            assert!(parse(torn).is_none(), "{torn}");
        }
    }

    #[test]
    fn a_retried_join_arrived_with_its_first_try_and_unlogged_buyers_are_counted() {
        let log = "\
            1000.900 0.100 503 a\n\
            1002.000 0.000 201 a\n\
            1001.000 0.500 201 b\n\
            torn line\n";
        let joined = vec![
            ("a".to_owned(), 7),
            ("b".to_owned(), 3),
            ("c".to_owned(), 9),
        ];
        let door = order(log, &joined);
        assert_eq!(door.arrivals, vec![(1_000_800, 7), (1_000_500, 3)]);
        assert_eq!(door.missing, 1);
        // a: shed at 1000.8 s, its token answered at 1002.0 s; b: 0.5 s at the door.
        assert_eq!(door.door_to_token_ms, vec![500, 1_200]);
        assert_eq!(door.door_to_token_at(0.5), Some(500));
        assert_eq!(door.door_to_token_at(0.99), Some(1_200));
        assert_eq!(DoorOrder::default().door_to_token_at(0.99), None);
    }
}
