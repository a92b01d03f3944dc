//! Request bodies as anyone may send them: arbitrary bytes into each body type the API takes.
//! Property: nothing panics. (serde reads a struct from a JSON array as well as an object, so
//! "only objects" is not a property of these types.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<serde_json::Value>(data);
    // The provider's event, the body of `POST /api/payments/webhook`.
    let _ = reservation::payments::webhook::parse_event(data);
    #[cfg(feature = "requests")]
    requests(data);
});

/// The gateway's own body types (`gateway::requests`), where the checkout has them
/// (`scripts/fuzz.sh` turns the feature on when `gateway/src/requests.rs` exists).
#[cfg(feature = "requests")]
fn requests(data: &[u8]) {
    use gateway::requests::*;
    let _ = serde_json::from_slice::<HoldRequest>(data);
    let _ = serde_json::from_slice::<CheckoutRequest>(data);
    let _ = serde_json::from_slice::<CreateEvent>(data);
    let _ = serde_json::from_slice::<AdmissionSettings>(data);
    let _ = serde_json::from_slice::<SeatsRequest>(data);
    let _ = serde_json::from_slice::<SeatSpec>(data);
    let _ = serde_json::from_slice::<Generate>(data);
}
