//! The `Stripe-Signature` header and body as anyone on the internet may send them.
//! Properties: nothing panics; an oversized header is refused as such; a header that verifies
//! names the body's true signature; what `sign` writes always verifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reservation::payments::webhook::{self, SignatureError};

const SECRET: &[u8] = b"whsec_fuzzing";
const NOW: i64 = 1_700_000_000;

fuzz_target!(|data: &[u8]| {
    // The header runs up to the first newline (which a header cannot hold); the body follows.
    let (header, body) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(header) = std::str::from_utf8(header) else {
        return;
    };
    let got = webhook::verify(SECRET, Some(header), body, NOW);
    if header.len() > webhook::MAX_HEADER_BYTES {
        assert_eq!(got, Err(SignatureError::TooLarge));
    }
    if got.is_ok() {
        // Only a header carrying the real tag for its own timestamp may pass.
        let t = header
            .split(',')
            .find_map(|e| e.trim().strip_prefix("t="))
            .and_then(|t| t.parse::<i64>().ok())
            .expect("a verified header has a timestamp");
        let real = webhook::sign(SECRET, t, body);
        let tag = real.split_once(",v1=").expect("sign writes a v1").1;
        assert!(
            header.to_ascii_lowercase().contains(tag),
            "verified without the real tag: {header:?}"
        );
    }
    let signed = webhook::sign(SECRET, NOW, body);
    assert_eq!(webhook::verify(SECRET, Some(&signed), body, NOW), Ok(()));
});
