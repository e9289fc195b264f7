//! The header fields that decide where the body ends and how the connection is handled (Host,
//! Content-Length, Transfer-Encoding, Connection, Expect), gathered in one pass, and the framing
//! rules of RFC 9112 §6 applied to them.

use crate::host::valid_host;
use crate::token::{eq_lowercase, is_token, list_elements, trim_ows};
use crate::{BodyFraming, Limits, ProtoError, Version};

use super::bad;

/// The header fields that decide framing and connection handling, gathered in one pass.
#[derive(Default)]
pub(super) struct Framing {
    hosts: usize,
    content_length: Option<u64>,
    transfer_encoding: bool,
    /// `chunked` was seen in Transfer-Encoding (and must be the last coding).
    chunked: bool,
    /// A coding followed `chunked`, or `chunked` came twice.
    chunked_not_last: bool,
    /// A coding other than chunked came before it.
    other_coding: bool,
    close: bool,
    keep_alive: bool,
    expect_continue: bool,
    pub(super) forwarding: bool,
}

impl Framing {
    pub(super) fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), ProtoError> {
        match name.len() {
            4 if eq_lowercase(name, b"host") => {
                self.hosts += 1;
                if !valid_host(value) {
                    return Err(bad("invalid Host header field"));
                }
            }
            6 if eq_lowercase(name, b"expect") => {
                self.expect_continue |=
                    list_elements(value).any(|e| eq_lowercase(e, b"100-continue"));
            }
            10 if eq_lowercase(name, b"connection") => {
                for token in list_elements(value) {
                    if eq_lowercase(token, b"close") {
                        self.close = true;
                    } else if eq_lowercase(token, b"keep-alive") {
                        self.keep_alive = true;
                    }
                }
            }
            14 if eq_lowercase(name, b"content-length") => {
                // `1*DIGIT`; a list only arises from duplicated fields, and then every member
                // must be the same number (RFC 9110 §8.6, RFC 9112 §6.3).
                for element in value.split(|&b| b == b',') {
                    let n = parse_content_length(trim_ows(element))?;
                    if self.content_length.is_some_and(|prev| prev != n) {
                        return Err(bad("conflicting Content-Length values"));
                    }
                    self.content_length = Some(n);
                }
            }
            17 if eq_lowercase(name, b"transfer-encoding") => {
                self.transfer_encoding = true;
                for coding in list_elements(value) {
                    if self.chunked {
                        self.chunked_not_last = true;
                    }
                    let coding_name = trim_ows(coding.split(|&b| b == b';').next().unwrap_or(b""));
                    if !is_token(coding_name) {
                        return Err(bad("invalid transfer coding"));
                    }
                    if eq_lowercase(coding, b"chunked") {
                        self.chunked = true;
                    } else if !self.chunked {
                        self.other_coding = true;
                    }
                }
            }
            _ => {
                self.forwarding |= crate::forwarded::is_forwarding_header(name);
            }
        }
        Ok(())
    }

    /// (body framing, keep-alive, expect 100-continue) after all fields were seen.
    pub(super) fn finish(
        &self,
        version: Version,
        limits: &Limits,
    ) -> Result<(BodyFraming, bool, bool), ProtoError> {
        if self.hosts > 1 {
            return Err(bad("more than one Host header field"));
        }
        if version == Version::Http11 && self.hosts == 0 {
            return Err(bad("HTTP/1.1 request without Host"));
        }
        let body = if self.transfer_encoding {
            if version == Version::Http10 {
                // RFC 9112 §6.1: the framing of a 1.0 message with Transfer-Encoding is faulty.
                return Err(bad("Transfer-Encoding in an HTTP/1.0 request"));
            }
            if self.content_length.is_some() {
                return Err(bad("both Content-Length and Transfer-Encoding"));
            }
            if !self.chunked || self.chunked_not_last {
                return Err(bad("final transfer coding is not chunked"));
            }
            if self.other_coding {
                return Err(ProtoError::NotImplemented);
            }
            BodyFraming::Chunked
        } else {
            match self.content_length {
                None | Some(0) => BodyFraming::None,
                Some(n) if n > limits.max_body => return Err(ProtoError::PayloadTooLarge),
                Some(n) => BodyFraming::Length(n),
            }
        };
        let keep_alive = match version {
            Version::Http11 | Version::Http2 | Version::Http3 => !self.close,
            Version::Http10 => self.keep_alive && !self.close,
        };
        let expect_continue = version == Version::Http11 && self.expect_continue;
        Ok((body, keep_alive, expect_continue))
    }
}

/// `Content-Length = 1*DIGIT` as u64: no sign, no spaces, no hex, no overflow.
pub(crate) fn parse_content_length(s: &[u8]) -> Result<u64, ProtoError> {
    if s.is_empty() {
        return Err(bad("empty Content-Length"));
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return Err(bad("invalid Content-Length"));
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(bad("Content-Length overflows"))?;
    }
    Ok(n)
}
