//! Queue and admission tokens as a stranger sends them: any string, and any claims signed with
//! the key the gateway holds (what a token we issued could carry after a format change).
//! Properties: nothing panics, and a token that verifies is for the event that was asked.
#![no_main]

use std::sync::{Arc, OnceLock};

use admission::testing::MemoryDb;
use admission::{Admission, AdmissionConfig, Clock, KeyRing};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use libfuzzer_sys::fuzz_target;
use sha2::Sha256;

const SECRET: &[u8] = b"fuzzing-secret-of-thirty-two-bytes!!";
const EVENT: &str = "ev-fuzz";
/// 2023-11-14: a fixed "now", so a run is reproducible.
const NOW_MS: i64 = 1_700_000_000_000;

fn admission() -> &'static Admission {
    static ADMISSION: OnceLock<Admission> = OnceLock::new();
    ADMISSION.get_or_init(|| {
        let clock = Clock::manual(NOW_MS);
        let keys = KeyRing::new([("k1", SECRET)]).expect("a one-key ring");
        let mut cfg = AdmissionConfig::new(keys);
        cfg.clock = clock.clone();
        let db = Arc::new(MemoryDb::new(clock));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        runtime
            .block_on(Admission::connect("memory", db, cfg))
            .expect("the memory backend connects")
    })
}

/// `claims` signed as the gateway signs: HS256 with kid `k1`.
fn signed(claims: &[u8]) -> String {
    let mut token = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"HS256","kid":"k1"}"#);
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(claims, &mut token);
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).expect("any key length");
    mac.update(token.as_bytes());
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(mac.finalize().into_bytes(), &mut token);
    token
}

fn check(token: &str) {
    let adm = admission();
    if let Ok(claims) = adm.verify_queue_token(EVENT, Some(token)) {
        assert_eq!(claims.event, EVENT);
    }
    if let Ok(claims) = adm.verify_admission_token(EVENT, Some(token)) {
        assert_eq!(claims.event, EVENT);
    }
    let _ = adm.verify_admission_token_any_event(Some(token));
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        if let Ok(token) = std::str::from_utf8(rest) {
            check(token);
        }
    } else {
        check(&signed(rest));
    }
});
