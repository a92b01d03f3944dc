//! When the seats will run out, as the organizer's timeline shows it.
//!
//! The chance of a seat (`chance.rs`) says, for a place in line, how likely the seats last
//! until that place is offered. Read the other way round it says how far the seats reach:
//! every offer ahead takes `q` seats on average (buyers who claim, times the seats each buys),
//! and `R` seats are left for the line once the buyers already choosing and the offers still
//! open have taken theirs. The chance falls to one half `(R − ½) ÷ q` places behind the served
//! frontier: that many more buyers can still expect a seat, and the one after them probably
//! cannot. At the outflow measured over the last minute those places are offered in
//! `places ÷ (outflow per minute ÷ 60)` seconds, which is when the organizer should expect
//! "sold out". While the queue is paused, closed, before its opening or before any outflow was
//! measured nothing flows, so no time is given; once sold out, none are left and the time is
//! now.

use serde::Serialize;

use crate::snapshot::{EventState, Snapshot};

/// The forecast of one snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Forecast {
    pub state: EventState,
    pub seats_left: u64,
    pub seats_per_buyer: f64,
    pub outflow_per_min: Option<f64>,
    /// Places behind the served frontier that can still expect a seat (chance ≥ ½).
    pub places_to_sell_out: Option<u64>,
    /// Seconds until those places are offered, at the measured outflow.
    pub sold_out_in_s: Option<u64>,
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
        let flowing = snapshot.state == EventState::Open;
        let outflow = snapshot.outflow_per_min.filter(|_| flowing);
        let in_s = match snapshot.state {
            EventState::SoldOut => Some(0),
            _ => places.zip(outflow).and_then(|(p, o)| sold_out_in_s(p, o)),
        };
        Forecast {
            state: snapshot.state,
            seats_left: snapshot.seats_left,
            seats_per_buyer: snapshot.seats_per_buyer,
            outflow_per_min: snapshot.outflow_per_min,
            places_to_sell_out: places,
            sold_out_in_s: in_s,
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

/// Seconds to offer `places` at `outflow_per_min`; `None` while nothing flows.
pub fn sold_out_in_s(places: u64, outflow_per_min: f64) -> Option<u64> {
    if outflow_per_min.is_nan() || outflow_per_min <= 0.0 {
        return None;
    }
    Some((places as f64 * 60.0 / outflow_per_min).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chance::SeatModel;

    fn model(seats_for_queue: f64, per_place: f64) -> SeatModel {
        SeatModel {
            seats_for_queue,
            per_place,
            per_place_var: 0.1,
            estimate_var: 0.0001,
            base_var: 0.25,
        }
    }

    fn snapshot(state: EventState, outflow: Option<f64>) -> Snapshot {
        Snapshot {
            state,
            seats_left: 100,
            seats_per_buyer: 2.0,
            outflow_per_min: outflow,
            seat_model: Some(model(100.5, 2.0)),
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
    fn the_time_is_the_places_at_the_measured_outflow() {
        // 50 places at 30 a minute: 100 seconds.
        let f = Forecast::of(&snapshot(EventState::Open, Some(30.0)));
        assert_eq!(f.places_to_sell_out, Some(50));
        assert_eq!(f.sold_out_in_s, Some(100));
        assert_eq!(sold_out_in_s(7, 60.0), Some(7));
        assert_eq!(sold_out_in_s(7, 0.0), None);
    }

    #[test]
    fn no_time_while_nothing_flows_and_none_left_once_sold_out() {
        let paused = Forecast::of(&snapshot(EventState::Paused, Some(30.0)));
        assert_eq!(paused.places_to_sell_out, Some(50));
        assert_eq!(paused.sold_out_in_s, None);
        let unmeasured = Forecast::of(&snapshot(EventState::Open, None));
        assert_eq!(unmeasured.sold_out_in_s, None);
        let sold_out = Forecast::of(&snapshot(EventState::SoldOut, None));
        assert_eq!(
            (sold_out.places_to_sell_out, sold_out.sold_out_in_s),
            (Some(0), Some(0))
        );
        let before_any_tick = Forecast::of(&Snapshot::default());
        assert_eq!(before_any_tick.places_to_sell_out, None);
        assert_eq!(before_any_tick.sold_out_in_s, None);
    }
}
