//! The largest (and smallest) value of every number an organizer sets. Each bound keeps one
//! request from costing the service more than an on-sale can use: seats are generated in
//! memory before they are written, and durations become timers and deadlines.

use crate::Error;

/// Seats one request may add (a list or `rows × per_row`).
pub const SEATS_PER_REQUEST: i64 = 100_000;
/// Seats one event may have in all.
pub const SEATS_PER_EVENT: i64 = 200_000;
/// Rows, and seats per row, of a generated block (their product is bounded by
/// [`SEATS_PER_REQUEST`], checked without overflow).
pub const ROWS: i64 = 100_000;
pub const PER_ROW: i64 = 100_000;
/// A seat's price in the currency's smallest unit (one million whole units).
pub const PRICE_CENTS: i64 = 100_000_000;
/// A seat's number within its row.
pub const SEAT_NUMBER: i64 = 1_000_000;
/// Seats one hold may take (the buyer's `quantity` is bounded by the event's own setting).
pub const SEATS_PER_HOLD: i64 = 100;
/// A hold's first life and its longest life, extensions included (one day).
pub const HOLD_S: i64 = 86_400;
/// When reconciliation starts asking the provider (one day).
pub const RESOLVE_S: i64 = 86_400;
/// When an unanswered payment is abandoned and its seats freed (three days).
pub const ABANDON_S: i64 = 259_200;
/// Offers handed out per minute.
pub const RATE_PER_MIN: i64 = 1_000_000;
/// Buyers admitted at once (sessions plus open offers).
pub const MAX_ACTIVE: i64 = 1_000_000;
/// An admission session's life (seven days; at least `max_hold_s + abandon_s`).
pub const SESSION_S: i64 = 604_800;
/// How long an offer waits to be claimed (one day).
pub const OFFER_S: i64 = 86_400;
/// The age an organizer may ask stuck payments to be older than (one year): past the longest
/// life a payment attempt can have, and far from overflowing when turned into milliseconds.
pub const STUCK_S: i64 = 31_536_000;

/// `value` within `min..=max`, or the typed refusal naming the field and its bounds.
pub(crate) fn within(field: &'static str, value: i64, min: i64, max: i64) -> Result<(), Error> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(Error::OutOfRange { field, min, max })
    }
}

/// `rows × per_row`, refused when either is out of range or the product exceeds
/// [`SEATS_PER_REQUEST`]; computed without overflow, before anything is allocated.
pub fn generated_seats(rows: u32, per_row: u32) -> Result<i64, Error> {
    within("rows", i64::from(rows), 1, ROWS)?;
    within("per_row", i64::from(per_row), 1, PER_ROW)?;
    match rows.checked_mul(per_row).map(i64::from) {
        Some(n) if n <= SEATS_PER_REQUEST => Ok(n),
        _ => Err(Error::OutOfRange {
            field: "rows × per_row",
            min: 1,
            max: SEATS_PER_REQUEST,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_blocks_are_bounded_without_overflow() {
        assert_eq!(generated_seats(10, 20).ok(), Some(200));
        assert_eq!(generated_seats(1, 100_000).ok(), Some(100_000));
        assert!(matches!(
            generated_seats(65_536, 65_536),
            Err(Error::OutOfRange {
                field: "rows × per_row",
                ..
            })
        ));
        assert!(matches!(
            generated_seats(u32::MAX, u32::MAX),
            Err(Error::OutOfRange { field: "rows", .. })
        ));
        assert!(matches!(
            generated_seats(0, 5),
            Err(Error::OutOfRange { field: "rows", .. })
        ));
        assert!(matches!(
            generated_seats(317, 317),
            Err(Error::OutOfRange {
                field: "rows × per_row",
                ..
            })
        ));
    }
}
