//! The id newtypes as they arrive in paths and bodies. Properties: nothing panics; a string
//! that parses comes back unchanged (text, display, JSON); JSON refuses what parsing refuses.
#![no_main]

use std::fmt::Display;
use std::str::FromStr;

use libfuzzer_sys::fuzz_target;
use reservation::{AttemptId, EventId, HoldId, OrderId, SeatId, SessionId, TicketId};
use serde::Serialize;
use serde::de::DeserializeOwned;

fn round_trip<T>(input: &str)
where
    T: FromStr + AsRef<str> + Display + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::Value::String(input.to_owned());
    let from_json = serde_json::from_value::<T>(json);
    match input.parse::<T>() {
        Ok(id) => {
            assert_eq!(id.as_ref(), input);
            assert_eq!(id.to_string(), input);
            let text = serde_json::to_string(&id).expect("an id serializes");
            assert_eq!(serde_json::from_str::<T>(&text).ok().as_ref(), Some(&id));
            assert_eq!(from_json.ok().as_ref(), Some(&id));
        }
        Err(_) => assert!(
            from_json.is_err(),
            "JSON took what parsing refused: {input:?}"
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    round_trip::<EventId>(input);
    round_trip::<HoldId>(input);
    round_trip::<OrderId>(input);
    round_trip::<SeatId>(input);
    round_trip::<SessionId>(input);
    round_trip::<AttemptId>(input);
    round_trip::<TicketId>(input);
});
