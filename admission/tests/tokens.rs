//! Every bad token kind is refused with its typed error; rotated keys still verify.

mod support;

use admission::{Admission, AdmissionError, InvalidToken, KeyRing};
use base64::Engine;
use support::{Harness, Kind, client};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

fn invalid(r: Result<impl std::fmt::Debug, AdmissionError>) -> InvalidToken {
    match r {
        Err(AdmissionError::TokenInvalid(why)) => why,
        other => panic!("expected TokenInvalid, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn every_bad_token_kind_is_refused_with_its_error() {
    let h = Harness::new(Kind::Memory, "tokens", |c| c.session_s = 600).await;
    let event = h.event.as_str();
    let j = h.adm.join(event, client(), None).await.expect("join");
    let token = j.queue_token.as_str();
    assert_eq!(
        h.adm.verify_queue_token(event, Some(token)).expect("valid"),
        j.claims
    );

    let missing = h.adm.verify_queue_token(event, None);
    assert!(
        matches!(missing, Err(AdmissionError::TokenMissing)),
        "{missing:?}"
    );
    let empty = h.adm.verify_queue_token(event, Some(""));
    assert!(
        matches!(empty, Err(AdmissionError::TokenMissing)),
        "{empty:?}"
    );

    assert_eq!(
        invalid(h.adm.verify_queue_token(event, Some("garbage"))),
        InvalidToken::Malformed
    );
    assert_eq!(
        invalid(h.adm.verify_queue_token(event, Some("a.b.c"))),
        InvalidToken::Malformed
    );

    let parts: Vec<&str> = token.split('.').collect();
    let none = format!("{}.{}.", b64(r#"{"alg":"none","typ":"JWT"}"#), parts[1]);
    assert_eq!(
        invalid(h.adm.verify_queue_token(event, Some(&none))),
        InvalidToken::AlgorithmNotAllowed
    );
    let hs512 = format!(
        "{}.{}.{}",
        b64(r#"{"alg":"HS512","kid":"k2"}"#),
        parts[1],
        parts[2]
    );
    assert_eq!(
        invalid(h.adm.verify_queue_token(event, Some(&hs512))),
        InvalidToken::AlgorithmNotAllowed
    );
    let unknown_kid = format!(
        "{}.{}.{}",
        b64(r#"{"alg":"HS256","kid":"k9"}"#),
        parts[1],
        parts[2]
    );
    assert_eq!(
        invalid(h.adm.verify_queue_token(event, Some(&unknown_kid))),
        InvalidToken::UnknownKey
    );
    // Flip one character in the middle of the signature (not its padding bits).
    let sig = parts[2];
    let mid = sig.len() / 2;
    let flipped = if &sig[mid..=mid] == "A" { "B" } else { "A" };
    let forged = format!(
        "{}.{}.{}{}{}",
        parts[0],
        parts[1],
        &sig[..mid],
        flipped,
        &sig[mid + 1..]
    );
    assert_eq!(
        invalid(h.adm.verify_queue_token(event, Some(&forged))),
        InvalidToken::BadSignature
    );
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(r#"{"ev":"x","exp":99999999999,"typ":"queue"}"#),
        parts[2]
    );
    assert_eq!(
        invalid(h.adm.verify_queue_token(event, Some(&tampered))),
        InvalidToken::BadSignature
    );

    let foreign = h.adm.verify_queue_token("another-event", Some(token));
    assert!(
        matches!(foreign, Err(AdmissionError::WrongEvent)),
        "{foreign:?}"
    );

    // A queue token is not an admission token.
    let not_admitted = h.adm.verify_admission_token(event, Some(token));
    assert!(
        matches!(not_admitted, Err(AdmissionError::NotAdmitted)),
        "{not_admitted:?}"
    );

    // An admission token is not a queue token either.
    h.run(20, std::time::Duration::from_millis(100)).await;
    let admitted = h.adm.claim(&j.claims).await.expect("claim");
    let as_queue = h
        .adm
        .verify_queue_token(event, Some(&admitted.admission_token));
    assert_eq!(invalid(as_queue), InvalidToken::Malformed);
    let a = h
        .adm
        .verify_admission_token(event, Some(&admitted.admission_token))
        .expect("admission token");
    assert_eq!(a.session_id, admitted.session_id);
    assert_eq!(a.exp, admitted.session_expires_at.unix_timestamp());

    // Past `exp` (judged by admission's clock, which the test steers).
    h.advance(std::time::Duration::from_secs(601)).await;
    let expired = h
        .adm
        .verify_admission_token(event, Some(&admitted.admission_token));
    assert!(
        matches!(expired, Err(AdmissionError::TokenExpired)),
        "{expired:?}"
    );
    h.advance(std::time::Duration::from_secs(24 * 3600)).await;
    let expired = h.adm.verify_queue_token(event, Some(token));
    assert!(
        matches!(expired, Err(AdmissionError::TokenExpired)),
        "{expired:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn rotated_keys_keep_old_tokens_valid() {
    let h = Harness::new(Kind::Memory, "rotation", |_| {}).await;
    // An instance still signing with the old key only.
    let mut old_cfg = support::config(&h.clock);
    old_cfg.keys = KeyRing::parse("k1:old-secret-for-tests").expect("ring");
    let old = Admission::connect("memory", h.db.clone(), old_cfg)
        .await
        .expect("connect");
    let j = old.join(&h.event, client(), None).await.expect("join");
    let claims = h
        .adm
        .verify_queue_token(&h.event, Some(&j.queue_token))
        .expect("old kid verifies");
    assert_eq!(claims, j.claims);
    // A key ring without k1 refuses it as an unknown key.
    let new = h.adm.join(&h.event, client(), None).await.expect("join");
    let unknown = old.verify_queue_token(&h.event, Some(&new.queue_token));
    assert_eq!(invalid(unknown), InvalidToken::UnknownKey);
    assert!(KeyRing::parse("").is_err());
    assert!(KeyRing::parse("no-colon").is_err());
    assert!(
        !format!("{:?}", support::keys()).contains("secret"),
        "secrets never in Debug"
    );
}

#[tokio::test(start_paused = true)]
async fn joins_are_limited_per_client_address() {
    let clock = admission::Clock::system();
    let db = std::sync::Arc::new(admission::testing::MemoryDb::new(clock.clone()));
    let event = support::unique_event("limit");
    db.set_control(
        &event,
        admission::testing::control(support::at(clock.now_ms()), "s"),
    );
    let mut cfg = support::config(&clock);
    cfg.join_limit_per_min = 5;
    let adm = Admission::connect("memory", db, cfg)
        .await
        .expect("connect");
    for _ in 0..5 {
        adm.join(&event, client(), None)
            .await
            .expect("within the limit");
    }
    let err = adm
        .join(&event, client(), None)
        .await
        .expect_err("over the limit");
    assert!(
        matches!(err, AdmissionError::RateLimited { retry_after_s } if retry_after_s >= 1),
        "{err:?}"
    );
    adm.join(&event, [127, 0, 0, 9].into(), None)
        .await
        .expect("another address");
}
