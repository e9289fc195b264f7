//! The server's own error answers (protocol errors, the 408 of a request that came too slowly,
//! the 500 of an app that failed before sending anything): proto's one builder
//! (`h1::response::error_answer`, which decides the bytes) with the current Date and the
//! configured Server header. Every place that answers an error calls this.

use sluicegate_proto::h1::response;
use sluicegate_proto::ProtoError;

use crate::http_date::http_date;

/// Status 408's reason phrase (RFC 9110 §15.5.9).
pub const REQUEST_TIMEOUT: (u16, &str) = (408, "Request Timeout");
/// Status 504's reason phrase (RFC 9110 §15.6.5): the app did not answer within `--timeout`.
pub const GATEWAY_TIMEOUT: (u16, &str) = (504, "Gateway Timeout");
/// Status 500's reason phrase (RFC 9110 §15.6.1).
pub const INTERNAL_ERROR: (u16, &str) = (500, "Internal Server Error");

/// The complete answer for `status`/`reason`; the connection closes after it.
pub fn error_answer((status, reason): (u16, &str), server: &[u8]) -> Vec<u8> {
    response::error_answer(status, reason, &http_date(), server)
}

/// The length of [`error_answer`]'s body (its reason and a newline: proto's
/// `encode_error_response`), for the access log's byte count.
pub fn error_body_len((_, reason): (u16, &str)) -> u64 {
    reason.len() as u64 + 1
}

/// The answer a protocol error knows it needs (see `ProtoError::status`).
pub fn protocol_error_answer(e: &ProtoError, server: &[u8]) -> Vec<u8> {
    error_answer((e.status(), e.reason()), server)
}
