//! Hand-made JWTs for the bad-token cases: built from a real token's claims, then re-signed
//! with the right key but edited claims, a wrong key, an unknown `kid`, or no signature at all.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// The `kid` the gateway signs with when `FLOODGATE_TOKEN_SECRET` is set.
pub const KID: &str = "k1";

/// The claims of a token, unverified.
pub fn claims(token: &str) -> Value {
    let payload = token
        .split('.')
        .nth(1)
        .unwrap_or_else(|| panic!("not a JWT: {token}"));
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap_or_else(|e| panic!("JWT payload is not base64url: {e}"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("JWT payload is not JSON: {e}"))
}

fn part(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

/// An HS256 token over `claims` with `secret` and `kid`.
pub fn sign(claims: &Value, secret: &str, kid: &str) -> String {
    let head = part(&json!({"alg": "HS256", "typ": "JWT", "kid": kid}));
    let body = part(claims);
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{head}.{body}").as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{head}.{body}.{signature}")
}

/// `token`'s claims edited by `edit`, signed with the gateway's own secret.
pub fn resign(token: &str, secret: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut c = claims(token);
    edit(&mut c);
    sign(&c, secret, KID)
}

/// `token` with its `exp` an hour ago, validly signed.
pub fn expired(token: &str, secret: &str) -> String {
    resign(token, secret, |c| {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        c["iat"] = json!(now - 7200);
        c["exp"] = json!(now - 3600);
    })
}

/// The same claims signed with a key the gateway does not have.
pub fn forged(token: &str) -> String {
    sign(&claims(token), "not-the-gateway-secret", KID)
}

/// The same claims signed with the right secret under a `kid` the gateway does not know.
pub fn unknown_kid(token: &str, secret: &str) -> String {
    sign(&claims(token), secret, "k9")
}

/// `alg: none`: the claims with an empty signature.
pub fn alg_none(token: &str) -> String {
    let head = part(&json!({"alg": "none", "typ": "JWT", "kid": KID}));
    format!("{head}.{}.", part(&claims(token)))
}
