//! The organizer's emergency controls over admission: the mode the queue runs in, what to do
//! while the queue backend is down, and the message every waiting page shows. Stored as text
//! in `admission_controls` (checked there too) and parsed here, once, into types.

use crate::Error;

/// How the queue lets buyers through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AdmissionMode {
    /// Offers in queue order within rate and cap.
    #[default]
    Normal,
    /// Everyone waiting is offered at once, new joiners as they come; the cap is judged by
    /// the database when an offer is claimed.
    PassThrough,
    /// Joins are refused with the organizer's message; places already given are kept and
    /// offers pause until the mode changes.
    Maintenance,
}

impl AdmissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionMode::Normal => "normal",
            AdmissionMode::PassThrough => "pass_through",
            AdmissionMode::Maintenance => "maintenance",
        }
    }

    /// The stored text; an unknown value (a newer version wrote it) runs as `normal`.
    pub(crate) fn from_stored(text: &str) -> Self {
        match text {
            "pass_through" => AdmissionMode::PassThrough,
            "maintenance" => AdmissionMode::Maintenance,
            _ => AdmissionMode::Normal,
        }
    }
}

/// What admission does while its queue backend (Redis) does not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendDown {
    /// Refuse with 503 `overloaded` until it is back: nobody is let in out of order.
    #[default]
    FailClosed,
    /// Admit from the database alone, the cap judged by a conditional insert: the sale goes
    /// on, without queue order, rather than stopping.
    FailOpen,
}

impl BackendDown {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendDown::FailClosed => "fail_closed",
            BackendDown::FailOpen => "fail_open",
        }
    }

    pub(crate) fn from_stored(text: &str) -> Self {
        match text {
            "fail_open" => BackendDown::FailOpen,
            _ => BackendDown::FailClosed,
        }
    }
}

/// How a message is styled on the waiting page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageLevel {
    Info,
    Warning,
}

impl MessageLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageLevel::Info => "info",
            MessageLevel::Warning => "warning",
        }
    }

    pub(crate) fn from_stored(text: &str) -> Self {
        match text {
            "warning" => MessageLevel::Warning,
            _ => MessageLevel::Info,
        }
    }
}

/// The organizer's message to everyone waiting, shown as plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMessage {
    pub text: String,
    pub level: MessageLevel,
}

/// The longest message, in characters (what fits a banner on a phone).
pub const MESSAGE_CHARS: usize = 280;

impl QueueMessage {
    /// Some visible text, at most [`MESSAGE_CHARS`] characters, no control characters (a
    /// line break would be lost on the page; a stray escape has no place in a banner).
    pub fn validate(&self) -> Result<(), Error> {
        let chars = self.text.chars().count();
        if chars > MESSAGE_CHARS || self.text.trim().is_empty() {
            return Err(Error::OutOfRange {
                field: "message.text",
                min: 1,
                max: MESSAGE_CHARS as i64,
            });
        }
        if self.text.chars().any(char::is_control) {
            return Err(Error::Inconsistent(
                "message.text may not hold control characters",
            ));
        }
        Ok(())
    }

    /// The stored pair; a message needs its text.
    pub(crate) fn from_stored(text: Option<String>, level: Option<String>) -> Option<Self> {
        text.map(|text| QueueMessage {
            text,
            level: MessageLevel::from_stored(level.as_deref().unwrap_or("info")),
        })
    }
}
