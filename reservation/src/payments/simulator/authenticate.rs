//! 3-D Secure for `pm_card_authenticationRequired`: the bank's challenge page the buyer is
//! sent to (`next_action.redirect_to_url.url`), and what completing or failing it does.
//!
//! Completing authorizes the card (`requires_capture`, webhook
//! `payment_intent.amount_capturable_updated`); failing leaves the intent in
//! `requires_payment_method` with `payment_intent_authentication_failure` (webhook
//! `payment_intent.payment_failed`). Either way the buyer is sent back to the create call's
//! `return_url` with the query Stripe adds (`payment_intent`, `redirect_status`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::intent::{Failure, Intent, Status};
use super::state::State;

/// What the buyer's browser is told after choosing on the challenge page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthAnswer {
    /// No such payment.
    Unknown,
    /// Send the buyer back to the shop (303 to this URL).
    Return(String),
    /// The payment named no `return_url`: the page says it is done.
    Finished,
}

/// Which button the buyer pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Complete,
    Fail,
}

impl Choice {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "complete" => Some(Choice::Complete),
            "fail" => Some(Choice::Fail),
            _ => None,
        }
    }
}

impl State {
    /// Applies the buyer's choice to an intent waiting for authentication; a second choice
    /// (a reload, a double click) changes nothing and sends the buyer back again.
    pub(super) fn authenticate(
        &mut self,
        id: &str,
        choice: Choice,
    ) -> (AuthAnswer, Vec<(&'static str, Value)>) {
        let Some(intent) = self.intents.get_mut(id) else {
            return (AuthAnswer::Unknown, Vec::new());
        };
        let mut events = Vec::new();
        if intent.status == Status::RequiresAction {
            let key = intent.ledger_key();
            match choice {
                Choice::Complete => {
                    intent.status = Status::RequiresCapture;
                    intent.authenticated = true;
                    intent.charged = true;
                    events.push(("payment_intent.amount_capturable_updated", intent.json()));
                    self.ledger.attempt(&key).authorizations += 1;
                }
                Choice::Fail => {
                    intent.status = Status::RequiresPaymentMethod;
                    intent.failure = Some(Failure::AuthenticationFailed);
                    events.push(("payment_intent.payment_failed", intent.json()));
                    self.ledger.attempt(&key).declines += 1;
                }
            }
        }
        (return_to(intent), events)
    }
}

fn return_to(intent: &Intent) -> AuthAnswer {
    let Some(url) = &intent.return_url else {
        return AuthAnswer::Finished;
    };
    let outcome = match intent.status {
        Status::RequiresCapture | Status::Succeeded => "succeeded",
        Status::RequiresAction => "pending",
        _ => "failed",
    };
    let joiner = if url.contains('?') { '&' } else { '?' };
    AuthAnswer::Return(format!(
        "{url}{joiner}payment_intent={}&payment_intent_client_secret={}_secret_{}&redirect_status={outcome}",
        intent.id, intent.id, intent.secret
    ))
}

/// The challenge page's only styling, inline so the page stands alone (the simulator's own
/// server has no static files). A gateway serving the page allows exactly this text through
/// its Content-Security-Policy by hash ([`challenge_style_source`]).
pub const CHALLENGE_STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;\
color:#1b2230;line-height:1.5}button{font:inherit;font-size:1rem;padding:.6rem 1rem;margin:.3rem 0;min-height:44px}";

/// The CSP source (`'sha256-…'`) that allows [`CHALLENGE_STYLE`] in a `style-src` list.
pub fn challenge_style_source() -> String {
    format!(
        "'sha256-{}'",
        STANDARD.encode(Sha256::digest(CHALLENGE_STYLE.as_bytes()))
    )
}

/// The challenge page of one intent, or `None` for an unknown one. Plain HTML forms, no
/// script; its one inline style is allowed by hash where a policy applies.
pub(super) fn page(intent: &Intent) -> String {
    let amount = format!(
        "{}.{:02} {}",
        intent.amount / 100,
        intent.amount % 100,
        intent.currency.to_uppercase()
    );
    let id = &intent.id;
    let body = if intent.status == Status::RequiresAction {
        format!(
            r#"<p>Your bank asks you to confirm a payment of <strong>{amount}</strong>.</p>
<p>This is the payment simulator's stand-in for a bank's 3-D Secure check.</p>
<form method="post" action="/_sim/authenticate/{id}/complete"><button type="submit">Complete authentication</button></form>
<form method="post" action="/_sim/authenticate/{id}/fail"><button type="submit">Fail authentication</button></form>"#
        )
    } else {
        format!(
            r#"<p>This payment of <strong>{amount}</strong> needs no authentication now.</p>
<form method="post" action="/_sim/authenticate/{id}/complete"><button type="submit">Return to the shop</button></form>"#
        )
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authenticate your payment</title>
<style>{CHALLENGE_STYLE}</style>
</head><body><main><h1>Authenticate your payment</h1>
{body}
</main></body></html>
"#
    )
}

/// The page after a choice when the payment named no `return_url`.
pub(super) const FINISHED_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Authentication finished</title></head>
<body><main><h1>Authentication finished</h1><p>You can close this page and go back to the shop.</p></main></body></html>
"#;
