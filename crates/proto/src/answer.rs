//! The server's own answers (static files, the health path) as protocol-neutral values: a
//! status, the fields, the body's length and where its bytes come from. Each protocol frames
//! an [`Answer`] its own way, adding Date and Server as it does for app responses: HTTP/1.1
//! encodes it into its head (`h1::response::encode_answer`, with Content-Length and
//! Connection), HTTP/2 turns it into a HEADERS frame (`src/io/h2/own_answer.rs`); another
//! protocol reads the same fields. Nothing here is encoded.

use crate::files::{BodyRange, Encoding};

/// Header values the server adds to every response, as for app responses.
#[derive(Debug, Clone, Copy)]
pub struct ServerFields<'a> {
    /// The current 29-byte IMF-fixdate (`crate::date`, cached per second by the I/O layer);
    /// empty: no Date header. Also "now" for Last-Modified clamping and If-Range.
    pub date: &'a [u8],
    /// The Server header value; empty: none.
    pub server: &'a [u8],
    /// Encoded header lines added to the answer (`h1::encode::ResponseHead::extra`): HTTP/1.1
    /// only; empty: none.
    pub extra: &'a [u8],
}

/// The most fields an answer carries (a static file's 200 or 206: eight).
pub const MAX_FIELDS: usize = 8;

/// An answer of the server's own, decided and not yet framed. Field names are as HTTP/1.1
/// writes them (`Content-Type`); a protocol that wants them in lower case lowers them.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    pub status: u16,
    fields: [(&'a [u8], &'a [u8]); MAX_FIELDS],
    len: usize,
    /// The Content-Length the answer states: the body's length, or for a HEAD request what
    /// GET would get. `None`: no Content-Length (304).
    pub length: Option<u64>,
    /// What follows the head (nothing for HEAD).
    pub body: AnswerBody,
    /// The server asks the connection to end after this answer (the health path while the
    /// server stops). HTTP/1.1 says `Connection: close`; a multiplexed protocol has its own
    /// way to end a connection (GOAWAY) and ignores it.
    pub closes: bool,
}

/// What follows an answer's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerBody {
    /// Nothing (HEAD, 301, 304, an empty file).
    Empty,
    /// A short text (an error's reason, the health path's word).
    Text(&'static [u8]),
    /// This range of a static file's representation (`encoding` names which file: the file
    /// itself or a precompressed sibling); the I/O layer holds the bytes.
    File {
        encoding: Encoding,
        range: BodyRange,
    },
}

impl<'a> Answer<'a> {
    /// An answer of `status` with no fields yet and no body.
    pub fn new(status: u16) -> Answer<'a> {
        Answer {
            status,
            fields: [(&[], &[]); MAX_FIELDS],
            len: 0,
            length: Some(0),
            body: AnswerBody::Empty,
            closes: false,
        }
    }

    /// Add a field. Callers stay within [`MAX_FIELDS`]; exceeding it is a bug.
    pub fn push(&mut self, name: &'a [u8], value: &'a [u8]) {
        self.fields[self.len] = (name, value);
        self.len += 1;
    }

    /// The fields, in the order they were added.
    pub fn fields(&self) -> &[(&'a [u8], &'a [u8])] {
        &self.fields[..self.len]
    }

    /// A short text body (none for a HEAD request, whose Content-Length still says its
    /// length).
    pub fn with_text(mut self, text: &'static [u8], is_head: bool) -> Answer<'a> {
        self.length = Some(text.len() as u64);
        self.body = if is_head {
            AnswerBody::Empty
        } else {
            AnswerBody::Text(text)
        };
        self
    }

    /// The bytes of the body that follow the head (what the access log counts).
    pub fn body_bytes(&self) -> u64 {
        match self.body {
            AnswerBody::Empty => 0,
            AnswerBody::Text(t) => t.len() as u64,
            AnswerBody::File { range, .. } => range.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_order_and_a_head_request_gets_no_text() {
        let mut a = Answer::new(404);
        a.push(b"Content-Type", b"text/plain");
        a.push(b"Vary", b"Accept-Encoding");
        assert_eq!(a.fields()[1], (&b"Vary"[..], &b"Accept-Encoding"[..]));
        let get = a.with_text(b"Not Found\n", false);
        assert_eq!(get.body, AnswerBody::Text(b"Not Found\n"));
        assert_eq!((get.length, get.body_bytes()), (Some(10), 10));
        let head = a.with_text(b"Not Found\n", true);
        assert_eq!((head.length, head.body_bytes()), (Some(10), 0));
    }
}
