//! The seat map of a stadium, cut from each refresh of the seat snapshot: the sections with
//! seats left, each section's seats as its own small answer, and the seats ordered by the
//! version of their last availability change, so "what changed since version V" is a binary
//! search and a short slice, with no query per request.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use serde_json::{Value, json};

use reservation::SeatView;

/// The most changes one `?since=` answer carries; a page further behind reloads its section.
pub const MAX_CHANGES: usize = 2000;

#[derive(Debug, Default)]
pub struct Stadium {
    /// The event's availability version the snapshot was read at (read before the seats).
    pub version: i64,
    /// `[{section, seats, seats_left, general_admission}]`, in section order.
    pub sections: Vec<Value>,
    /// Each section's `GET …/seats?section=` body.
    bodies: HashMap<String, Bytes>,
    /// (version, seat id, available) of every seat, by version.
    changes: Vec<(i64, String, bool)>,
}

/// What `?since=` answers.
#[derive(Debug, PartialEq, Eq)]
pub enum Since {
    Changes(Value),
    /// More than `MAX_CHANGES`: the page must load its section again.
    TooFarBehind,
}

/// A seat as the map draws it.
pub fn seat_json(s: &SeatView) -> Value {
    json!({
        "seat_id": s.seat_id.as_str(), "section": s.section, "row": s.row_label,
        "number": s.number, "price_cents": s.price_cents,
        "state": if is_available(s) { "available" } else { "taken" },
    })
}

fn is_available(s: &SeatView) -> bool {
    s.state == "available"
}

impl Stadium {
    pub fn new(version: i64, seats: &[SeatView]) -> Result<Stadium, serde_json::Error> {
        let mut by_section: BTreeMap<&str, Vec<&SeatView>> = BTreeMap::new();
        for seat in seats {
            by_section.entry(&seat.section).or_default().push(seat);
        }
        let mut sections = Vec::with_capacity(by_section.len());
        let mut bodies = HashMap::with_capacity(by_section.len());
        for (name, seats) in &by_section {
            let left = seats.iter().filter(|s| is_available(s)).count();
            // A section without rows is general admission: bought as a quantity.
            let general = seats.iter().all(|s| s.row_label.is_empty());
            sections.push(json!({
                "section": name, "seats": seats.len(), "seats_left": left,
                "general_admission": general,
            }));
            let list: Vec<Value> = seats.iter().map(|s| seat_json(s)).collect();
            let body = json!({ "version": version, "section": name, "seats": list });
            bodies.insert((*name).to_owned(), Bytes::from(serde_json::to_vec(&body)?));
        }
        let mut changes: Vec<(i64, String, bool)> = seats
            .iter()
            .map(|s| {
                (
                    s.availability_version,
                    s.seat_id.as_str().to_owned(),
                    is_available(s),
                )
            })
            .collect();
        changes.sort_unstable();
        Ok(Stadium {
            version,
            sections,
            bodies,
            changes,
        })
    }

    /// One section's body, or `None` for a section the event does not have.
    pub fn section(&self, name: &str) -> Option<Bytes> {
        self.bodies.get(name).cloned()
    }

    /// The seats whose availability changed after `since`. A version ahead of this snapshot
    /// (another gateway's fresher one) has nothing newer here: it is answered as it came.
    pub fn since(&self, since: i64) -> Since {
        let from = self.changes.partition_point(|(v, _, _)| *v <= since);
        let newer = &self.changes[from..];
        if newer.len() > MAX_CHANGES {
            return Since::TooFarBehind;
        }
        let changes: Vec<Value> = newer
            .iter()
            .map(|(_, id, free)| {
                json!({"seat_id": id, "state": if *free { "available" } else { "taken" }})
            })
            .collect();
        Since::Changes(json!({ "version": self.version.max(since), "changes": changes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(id: &str, section: &str, row: &str, state: &str, version: i64) -> SeatView {
        SeatView {
            seat_id: id.parse().unwrap_or_else(|_| unreachable!()),
            section: section.into(),
            row_label: row.into(),
            number: 1,
            price_cents: 100,
            state: state.into(),
            availability_version: version,
        }
    }

    #[test]
    fn sections_changes_and_bounds() {
        let seats = vec![
            seat("A-1", "A", "1", "available", 0),
            seat("A-2", "A", "1", "held", 3),
            seat("GA-1", "GA", "", "available", 2),
            seat("GA-2", "GA", "", "sold", 1),
        ];
        let stadium = Stadium::new(3, &seats).unwrap_or_default();
        assert_eq!(stadium.sections.len(), 2);
        assert_eq!(stadium.sections[0]["seats_left"], 1);
        assert_eq!(stadium.sections[1]["general_admission"], true);
        assert!(stadium.section("B").is_none());
        let Since::Changes(answer) = stadium.since(1) else {
            unreachable!()
        };
        assert_eq!(answer["version"], 3);
        assert_eq!(
            answer["changes"],
            json!([{"seat_id": "GA-1", "state": "available"}, {"seat_id": "A-2", "state": "taken"}])
        );
        let Since::Changes(ahead) = stadium.since(9) else {
            unreachable!()
        };
        assert_eq!(ahead, json!({"version": 9, "changes": []}));
        let many: Vec<SeatView> = (0..=MAX_CHANGES)
            .map(|n| seat(&format!("S-{n}"), "S", "1", "held", 5))
            .collect();
        let busy = Stadium::new(5, &many).unwrap_or_default();
        assert_eq!(busy.since(4), Since::TooFarBehind);
        assert!(matches!(busy.since(5), Since::Changes(_)));
    }
}
