//! The `--metrics-bind` listener's HTTP: `GET /metrics` (Prometheus's text format,
//! `observe::prometheus`) and `GET /debug/requests`, on a port of its own, never the app's. The
//! HTTP is proto's: the request head is read by its parser (the event loop's, as for any
//! connection) and every answer's head written by its encoder ([`simple_response`],
//! [`error_answer`]); [`answer`] is the whole decision for one request, bytes out.
//!
//! The listener is the event loop's (`io/event_loop/metrics.rs`): a connection of its own
//! kind, read, timed out and closed at a stop like any other, and answered here. Which pages
//! exist is the server's to say: the loop is handed them as a value.

use sluicegate_proto::h1::response::{error_answer, simple_response};
use sluicegate_proto::{ProtoError, RequestHead};

use crate::http_date::http_date;

/// A page of the listener: its content type and body.
pub type Page = (&'static str, String);

/// The complete answer (head and body) to one request read by proto's parser: `page(path)`
/// gives the page of a `GET` (None: 404); a `HEAD` gets its head; other methods 405 (and
/// `page` is not called); a request the parser refused, proto's error answer. The connection
/// closes after it.
pub fn answer(
    request: Result<&RequestHead, ProtoError>,
    page: impl FnOnce(&[u8]) -> Option<Page>,
) -> Vec<u8> {
    let date = http_date();
    let head = match request {
        Ok(head) => head,
        Err(e) => return error_answer(e.status(), e.reason(), &date, b""),
    };
    let (status, ctype, body) = if head.method() != b"GET" && !head.is_head {
        (405, "text/plain; charset=utf-8", "GET only\n".to_string())
    } else {
        match page(head.path()) {
            Some((ctype, body)) => (200, ctype, body),
            None => (404, "text/plain; charset=utf-8", "Not Found\n".to_string()),
        }
    };
    let mut out = Vec::with_capacity(160 + body.len());
    let (version, len) = (head.version, body.len() as u64);
    simple_response(
        &mut out,
        version,
        status,
        ctype.as_bytes(),
        len,
        false,
        &date,
        b"",
    );
    if !head.is_head {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// A request line (`GET /path?query HTTP/1.1`) with its query string shown as `?…`: pages
/// whoever reaches the metrics port can read tell the path, never what the client sent in the
/// query (tokens, search terms).
pub fn redact_query(line: &str) -> String {
    let Some(q) = line.find('?') else {
        return line.to_string();
    };
    // The target has no space (proto's parser refuses one): the query ends at the next.
    let end = line[q..].find(' ').map_or(line.len(), |i| q + i);
    format!("{}?…{}", &line[..q], &line[end..])
}

/// The answer when a page cannot be rendered now (too many being rendered at once): 503,
/// and the connection closes after it.
pub fn busy_answer(request: &RequestHead) -> Vec<u8> {
    let date = http_date();
    let body = b"Busy: try again\n";
    let mut out = Vec::with_capacity(160 + body.len());
    simple_response(
        &mut out,
        request.version,
        503,
        b"text/plain; charset=utf-8",
        body.len() as u64,
        false,
        &date,
        b"",
    );
    if !request.is_head {
        out.extend_from_slice(body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluicegate_proto::h1::HeadParser;
    use sluicegate_proto::Limits;

    fn ask(wire: &[u8]) -> String {
        let parsed = HeadParser::new().parse(wire, &Limits::default());
        let request = match &parsed {
            Ok(Some((head, _))) => Ok(head),
            Err(e) => Err(*e),
            Ok(None) => panic!("incomplete"),
        };
        let out = answer(request, |path| {
            (path == b"/metrics").then(|| ("text/x", "m 1\n".to_string()))
        });
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn query_strings_are_redacted() {
        assert_eq!(
            redact_query("GET /a/b?token=s3cret&x=1 HTTP/1.1"),
            "GET /a/b?… HTTP/1.1"
        );
        assert_eq!(redact_query("GET /a?b"), "GET /a?…");
        assert_eq!(redact_query("GET /plain HTTP/1.0"), "GET /plain HTTP/1.0");
    }

    #[test]
    fn pages_methods_and_refusals() {
        let ok = ask(b"GET /metrics?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        assert!(
            ok.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/x\r\n"),
            "{ok}"
        );
        assert!(ok.contains("Content-Length: 4\r\n") && ok.ends_with("\r\n\r\nm 1\n"));
        let head = ask(b"HEAD /metrics HTTP/1.1\r\nHost: h\r\n\r\n");
        assert!(head.contains("Content-Length: 4\r\n") && head.ends_with("\r\n\r\n"));
        assert!(ask(b"GET /nope HTTP/1.1\r\nHost: h\r\n\r\n").starts_with("HTTP/1.1 404 "));
        assert!(ask(b"POST /metrics HTTP/1.1\r\nHost: h\r\n\r\n").starts_with("HTTP/1.1 405 "));
        assert!(ask(b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400 "));
        assert!(ask(
            b"GET /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
        )
        .starts_with("HTTP/1.1 400 "));
    }
}
