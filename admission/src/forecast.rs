//! When the seats will run out, as the organizer's timeline shows it.
//!
//! The chance of a seat (`chance.rs`) says, for a place in line, how likely the seats last
//! until that place is offered. Read the other way round it says how far the seats reach:
//! every offer ahead takes `q` seats on average (buyers who claim, times the seats each buys),
//! and `R` seats are left for the line once the buyers already choosing and the offers still
//! open have taken theirs. The chance falls to one half `(R − ½) ÷ q` places behind the served
//! frontier: that many more buyers can still expect a seat, and the one after them probably
//! cannot. Those places are offered when a buyer that far back would be: the buyer's wait
//! (`wait.rs`), first the cap's free places at the rate, then as places free. That is when
//! the organizer should expect "sold out". While the queue is paused, closed or before its
//! opening nothing flows, and beyond the free places nothing is said until the time a place is
//! held is known, so no time is given; once sold out, none are left and the time is now.

use serde::Serialize;

use crate::snapshot::{EventState, Snapshot};
use crate::wait::wait_estimate;

/// The forecast of one snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Forecast {
    pub state: EventState,
    pub seats_left: u64,
    pub seats_per_buyer: f64,
    pub outflow_per_min: Option<f64>,
    /// Places behind the served frontier that can still expect a seat (chance ≥ ½).
    pub places_to_sell_out: Option<u64>,
    /// Seconds until those places are offered, and the range the buyer's wait gives for it.
    pub sold_out_in_s: Option<u64>,
    pub sold_out_in_range_s: Option<[u64; 2]>,
}

impl Forecast {
    /// From the latest snapshot; every estimate is `None` before the first tick's model.
    pub fn of(snapshot: &Snapshot) -> Forecast {
        let places = match snapshot.state {
            EventState::SoldOut => Some(0),
            _ => snapshot
                .seat_model
                .and_then(|m| places_to_sell_out(m.seats_for_queue, m.per_place)),
        };
        let in_s = match snapshot.state {
            EventState::SoldOut => Some((0, 0, 0)),
            _ => places.zip(snapshot.cap).and_then(|(p, cap)| match p {
                // The seats left go to buyers already offered or choosing.
                0 if cap.offer_rate_per_min > 0 => Some((0, 0, 0)),
                0 => None,
                p => wait_estimate(p - 1, &cap),
            }),
        };
        Forecast {
            state: snapshot.state,
            seats_left: snapshot.seats_left,
            seats_per_buyer: snapshot.seats_per_buyer,
            outflow_per_min: snapshot.outflow_per_min,
            places_to_sell_out: places,
            sold_out_in_s: in_s.map(|(point, _, _)| point),
            sold_out_in_range_s: in_s.map(|(_, low, high)| [low, high]),
        }
    }
}

/// `(R − ½) ÷ q`, whole places, never below none; `None` when an offer takes no seats.
pub fn places_to_sell_out(seats_for_queue: f64, per_place: f64) -> Option<u64> {
    // Not a number counts as no seats a place.
    if per_place.is_nan() || per_place <= 0.0 || !seats_for_queue.is_finite() {
        return None;
    }
    Some(((seats_for_queue - 0.5) / per_place).max(0.0).floor() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chance::SeatModel;
    use crate::wait::CapModel;

    fn model(seats_for_queue: f64, per_place: f64) -> SeatModel {
        SeatModel {
            seats_for_queue,
            per_place,
            per_place_var: 0.1,
            estimate_var: 0.0001,
            base_var: 0.25,
            // The race widens the chance before the end and moves no place's even chance.
            race_var: 100.0,
            known: true,
            sure_places: 0,
        }
    }

    fn cap(free: u64, held_s: Option<[f64; 2]>, offer_rate_per_min: u32) -> CapModel {
        CapModel {
            size: 100,
            free,
            offer_rate_per_min,
            held_s,
            held_spread: held_s.map(|_| 0.05),
        }
    }

    fn snapshot(state: EventState, cap: CapModel) -> Snapshot {
        Snapshot {
            state,
            seats_left: 100,
            seats_per_buyer: 2.0,
            // Offers ran at the rate while the cap filled: the pace of the opening.
            outflow_per_min: Some(600.0),
            seat_model: Some(model(100.5, 2.0)),
            cap: Some(cap),
            ..Snapshot::default()
        }
    }

    #[test]
    fn the_places_are_where_the_chance_is_one_half() {
        // 100.5 seats for the line at two a place: the 50th place has an even chance.
        assert_eq!(places_to_sell_out(100.5, 2.0), Some(50));
        let m = model(100.5, 2.0);
        assert_eq!(m.chance(50), 0.5);
        assert!(m.chance(40) > 0.5 && m.chance(60) < 0.5);
        // A fraction of a place is not a place; nothing left is none; no seats a place, no answer.
        assert_eq!(places_to_sell_out(10.0, 3.0), Some(3));
        assert_eq!(places_to_sell_out(0.2, 1.0), Some(0));
        assert_eq!(places_to_sell_out(-40.0, 1.0), Some(0));
        assert_eq!(places_to_sell_out(10.0, 0.0), None);
    }

    #[test]
    fn within_the_free_places_the_time_is_the_rate() {
        // 50 places, 60 free, 600 offers a minute: the 50th is offered in five seconds.
        let f = Forecast::of(&snapshot(EventState::Open, cap(60, None, 600)));
        assert_eq!(f.places_to_sell_out, Some(50));
        assert_eq!(f.sold_out_in_s, Some(5));
        let [low, high] = f.sold_out_in_range_s.expect("a range");
        assert!(low <= 5 && high >= 5 && low < high, "{low}–{high}");
    }

    #[test]
    fn beyond_the_free_places_the_time_follows_the_cap_not_the_opening_pace() {
        // A full cap of 100 places held 20 s frees 5 a second: 50 places take 10 s, where the
        // outflow of the opening (600 a minute) would have said 5 s.
        let f = Forecast::of(&snapshot(EventState::Open, cap(0, Some([20.0, 20.0]), 600)));
        assert_eq!(f.sold_out_in_s, Some(10));
        let [low, high] = f.sold_out_in_range_s.expect("a range");
        assert!(low < 10 && high > 10, "{low}–{high}");
        // Until the time a place is held is known, no time is said.
        let unknown = Forecast::of(&snapshot(EventState::Open, cap(0, None, 600)));
        assert_eq!(unknown.places_to_sell_out, Some(50));
        assert_eq!(
            (unknown.sold_out_in_s, unknown.sold_out_in_range_s),
            (None, None)
        );
    }

    #[test]
    fn no_time_while_nothing_flows_and_none_left_once_sold_out() {
        // Offers held (paused): the meter publishes no offer rate.
        let paused = Forecast::of(&snapshot(EventState::Paused, cap(60, None, 0)));
        assert_eq!(paused.places_to_sell_out, Some(50));
        assert_eq!(paused.sold_out_in_s, None);
        let sold_out = Forecast::of(&snapshot(EventState::SoldOut, cap(60, None, 0)));
        assert_eq!(
            (sold_out.places_to_sell_out, sold_out.sold_out_in_s),
            (Some(0), Some(0))
        );
        // Every seat left already belongs to a buyer offered or choosing: sold out is now.
        let taken = Snapshot {
            seat_model: Some(model(0.2, 2.0)),
            ..snapshot(EventState::Open, cap(0, None, 600))
        };
        assert_eq!(Forecast::of(&taken).sold_out_in_s, Some(0));
        let before_any_tick = Forecast::of(&Snapshot::default());
        assert_eq!(before_any_tick.places_to_sell_out, None);
        assert_eq!(before_any_tick.sold_out_in_s, None);
    }
}
