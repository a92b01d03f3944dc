//! The load generators' side of HTTP/1.1: requests are raw bytes written by the caller, and
//! answers are read here, one complete answer (head and `content-length` body) at a time.
//! Answers may be pipelined: what follows one stays in the buffer for the next call.

use std::io::{Error, ErrorKind, Result};

use tokio::io::{AsyncRead, AsyncReadExt};

/// What a load generator needs of an answer.
#[derive(Clone, Copy, Debug)]
pub struct Answer {
    pub status: u16,
    pub retry_after: bool,
}

/// Answers read off one connection: bytes received and not yet consumed. Consumed answers are
/// only skipped over, and the buffer is compacted before the next read, so a burst of
/// pipelined answers costs no copying per answer.
#[derive(Default)]
pub struct Answers {
    buffer: Vec<u8>,
    start: usize,
}

impl Answers {
    /// Forgets what was buffered (a new connection).
    pub fn clear(&mut self) {
        self.buffer.clear();
        self.start = 0;
    }

    /// Reads the next complete answer off `stream`.
    pub async fn next<R: AsyncRead + Unpin>(&mut self, stream: &mut R) -> Result<Answer> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((length, answer)) = complete(&self.buffer[self.start..])? {
                self.start += length;
                return Ok(answer);
            }
            self.buffer.drain(..self.start);
            self.start = 0;
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(Error::new(ErrorKind::UnexpectedEof, "closed mid-answer"));
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The first answer in `buffer` and its length in bytes, once all of it has arrived.
fn complete(buffer: &[u8]) -> Result<Option<(usize, Answer)>> {
    let broken = |what: &str| Error::new(ErrorKind::InvalidData, what.to_owned());
    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buffer[..end]).map_err(|_| broken("non-UTF-8 head"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| broken("no status"))?;
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (key, value) = l.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    };
    let body: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| broken("no content-length"))?;
    let length = end + 4 + body;
    Ok((buffer.len() >= length).then(|| {
        let retry_after = header("retry-after").is_some();
        (
            length,
            Answer {
                status,
                retry_after,
            },
        )
    }))
}
