//! The organizer's emergency controls as admission obeys them (DESIGN §3): the mode, what to
//! do while the queue backend is down, and the message every waiting page shows.

use serde::Serialize;

/// How the queue lets buyers through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Offers in queue order within rate and cap.
    #[default]
    Normal,
    /// Everyone waiting is offered at once and new joiners as they come; the cap is judged
    /// by the database when an offer is claimed.
    PassThrough,
    /// Joins refused with the message; places already given are kept, offers pause (an
    /// offer already made can still be claimed until it lapses, as in a pause).
    Maintenance,
}

/// How the message is styled on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageLevel {
    Info,
    Warning,
}

/// The organizer's message to everyone waiting: plain text, shown as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueMessage {
    pub text: String,
    pub level: MessageLevel,
}

impl QueueMessage {
    /// A short fingerprint, so a socket remembers which message it last told in one word.
    pub fn fingerprint(message: Option<&QueueMessage>) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let Some(m) = message else { return 0 };
        let mut h = DefaultHasher::new();
        m.text.hash(&mut h);
        (m.level as u8).hash(&mut h);
        h.finish() | 1
    }
}
