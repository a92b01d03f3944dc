//! A provider request as the simulator receives it, from an HTTP route or an in-process call.

use crate::payments::AuthorizeRequest;
use crate::payments::outcome::Expect;

/// One provider request, as either front end (HTTP route or in-process call) received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimRequest {
    CreateIntent {
        idempotency_key: Option<String>,
        form: Vec<(String, String)>,
    },
    RetrieveIntent {
        id: String,
    },
    SearchIntents {
        query: String,
    },
    CaptureIntent {
        id: String,
        idempotency_key: Option<String>,
        /// `amount_to_capture`, `expand[]`.
        form: Vec<(String, String)>,
    },
    CancelIntent {
        id: String,
        idempotency_key: Option<String>,
        /// `cancellation_reason`, `expand[]`.
        form: Vec<(String, String)>,
    },
    CreateRefund {
        idempotency_key: Option<String>,
        form: Vec<(String, String)>,
    },
}

impl SimRequest {
    pub(crate) fn authorize(req: &AuthorizeRequest) -> Self {
        SimRequest::CreateIntent {
            idempotency_key: Some(req.attempt_id.clone()),
            form: req.form(),
        }
    }
    pub(crate) fn retrieve(id: &str) -> Self {
        SimRequest::RetrieveIntent { id: id.to_owned() }
    }
    pub(crate) fn search(attempt_id: &str) -> Self {
        SimRequest::SearchIntents {
            query: crate::payments::search_query(attempt_id),
        }
    }
    pub(crate) fn capture(id: &str) -> Self {
        SimRequest::CaptureIntent {
            id: id.to_owned(),
            idempotency_key: None,
            form: Vec::new(),
        }
    }
    pub(crate) fn cancel(id: &str) -> Self {
        SimRequest::CancelIntent {
            id: id.to_owned(),
            idempotency_key: None,
            form: Vec::new(),
        }
    }
    pub(crate) fn refund(attempt_id: &str, payment_id: &str) -> Self {
        SimRequest::CreateRefund {
            idempotency_key: Some(crate::payments::refund_key(attempt_id)),
            form: vec![("payment_intent".into(), payment_id.to_owned())],
        }
    }

    pub(crate) fn expect(&self) -> Expect {
        match self {
            SimRequest::SearchIntents { .. } => Expect::Search,
            SimRequest::CreateRefund { .. } => Expect::Refund,
            _ => Expect::Intent,
        }
    }

    pub(super) fn is_post(&self) -> bool {
        !matches!(
            self,
            SimRequest::RetrieveIntent { .. } | SimRequest::SearchIntents { .. }
        )
    }

    pub(super) fn idempotency_key(&self) -> Option<&str> {
        match self {
            SimRequest::CreateIntent {
                idempotency_key, ..
            }
            | SimRequest::CaptureIntent {
                idempotency_key, ..
            }
            | SimRequest::CancelIntent {
                idempotency_key, ..
            }
            | SimRequest::CreateRefund {
                idempotency_key, ..
            } => idempotency_key.as_deref(),
            _ => None,
        }
    }

    pub(super) fn payment_method(&self) -> Option<&str> {
        match self {
            SimRequest::CreateIntent { form, .. } => form
                .iter()
                .find(|(k, _)| k == "payment_method")
                .map(|(_, v)| v.as_str()),
            _ => None,
        }
    }

    /// What "the same request" means for idempotency: the route and the sorted form.
    pub(super) fn fingerprint(&self) -> String {
        let (route, form): (String, &[(String, String)]) = match self {
            SimRequest::CreateIntent { form, .. } => ("create_intent".into(), form),
            SimRequest::CreateRefund { form, .. } => ("create_refund".into(), form),
            SimRequest::CaptureIntent { id, form, .. } => (format!("capture {id}"), form),
            SimRequest::CancelIntent { id, form, .. } => (format!("cancel {id}"), form),
            SimRequest::RetrieveIntent { id } => (format!("retrieve {id}"), &[]),
            SimRequest::SearchIntents { query } => (format!("search {query}"), &[]),
        };
        let mut form = form.to_vec();
        form.sort();
        format!("{route} {form:?}")
    }
}
