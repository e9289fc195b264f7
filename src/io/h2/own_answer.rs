//! The answers the server gives without the app (`--static` files, `--health-path`), over
//! HTTP/2: the loop's own decision and bytes (`LoopView::own_answer` fills an output queue
//! with an HTTP/1.1 head and the body, a file range for a static file), turned into a HEADERS
//! frame and DATA frames by an async task on the loop. No app thread, no Python: as
//! on HTTP/1.1, a busy app never slows them down. Files are read in `TLS_FILE_READ` blocks
//! (the output queue's own reader), at most what the stream's window allows at a time.

use std::future::poll_fn;
use std::io::IoSlice;

use bytes::Bytes;
use h2::server::SendResponse;

use crate::io::out_queue::OutQueue;

/// Header fields of an HTTP/1.1 head that HTTP/2 forbids (RFC 9113 §8.2.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// Take the next bytes from the front of `out` (memory, or a file range read in a block).
pub(crate) fn pull(out: &mut OutQueue, into: &mut Vec<u8>) -> usize {
    out.encrypt_with(-1, &mut |slices: &[IoSlice<'_>]| {
        slices
            .iter()
            .map(|s| {
                into.extend_from_slice(s);
                s.len()
            })
            .sum()
    })
    .unwrap_or(0)
}

/// The status and fields of the loop's HTTP/1.1 head (made by proto's encoders: one space
/// after the version, `Name: value` lines).
pub(crate) fn parse_head(head: &[u8]) -> Option<http::response::Builder> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let status_line = lines.next()?;
    let code = std::str::from_utf8(status_line.get(9..12)?)
        .ok()?
        .parse::<u16>()
        .ok()?;
    let mut builder = http::Response::builder().status(code);
    for line in lines.filter(|l| !l.is_empty()) {
        let colon = line.iter().position(|&b| b == b':')?;
        let name = line[..colon].to_ascii_lowercase();
        if CONNECTION_SPECIFIC.contains(&name.as_slice()) {
            continue;
        }
        let value = line[colon + 1..].trim_ascii();
        builder = builder.header(
            http::HeaderName::from_bytes(&name).ok()?,
            http::HeaderValue::from_bytes(value).ok()?,
        );
    }
    Some(builder)
}

/// Send the answer in `out` on the stream. Returns the body bytes sent.
pub(super) async fn send(
    mut respond: SendResponse<Bytes>,
    mut out: OutQueue,
    is_head: bool,
) -> u64 {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if pull(&mut out, &mut buf) == 0 {
            respond.send_reset(h2::Reason::INTERNAL_ERROR);
            return 0;
        }
    };
    let Some(response) = parse_head(&buf[..head_end]).and_then(|b| b.body(()).ok()) else {
        respond.send_reset(h2::Reason::INTERNAL_ERROR);
        return 0;
    };
    let mut body = buf.split_off(head_end + 4);
    let no_body = is_head || (body.is_empty() && out.is_empty());
    let Ok(mut send) = respond.send_response(response, no_body) else {
        return 0;
    };
    if no_body {
        return 0;
    }
    let mut sent = 0u64;
    loop {
        if body.is_empty() && pull(&mut out, &mut body) == 0 {
            let _ = send.send_data(Bytes::new(), true);
            return sent;
        }
        send.reserve_capacity(body.len());
        let n = match poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(Ok(n)) if n > 0 => n.min(body.len()),
            Some(Ok(_)) => continue,
            _ => return sent,
        };
        let rest = body.split_off(n);
        let piece = std::mem::replace(&mut body, rest);
        sent += piece.len() as u64;
        let last = body.is_empty() && out.is_empty();
        if send.send_data(Bytes::from(piece), last).is_err() || last {
            return sent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_head;

    #[test]
    fn the_loops_head_becomes_status_and_fields_without_connection_ones() {
        let head = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 100\r\nConnection: close\r\n\
                     Content-Range: bytes 0-99/1000\r\nKeep-Alive: timeout=5";
        let r = parse_head(head).unwrap().body(()).unwrap();
        assert_eq!(r.status(), 206);
        assert_eq!(r.headers()["content-length"], "100");
        assert_eq!(r.headers()["content-range"], "bytes 0-99/1000");
        assert!(r.headers().get("connection").is_none());
        assert!(r.headers().get("keep-alive").is_none());
    }

    #[test]
    fn a_head_that_is_not_ours_is_refused() {
        assert!(parse_head(b"HTTP/1.1 2x0 OK").is_none());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nno colon here").is_none());
    }
}
