//! HTTP/1.x (RFC 9112): request head parsing, request body decoding, the server's decisions
//! about each response and the interim answers before it (`interim`: 103 Early Hints), and
//! response encoding.

pub mod decode;
pub mod encode;
mod field_limit;
pub mod interim;
pub mod parse;
pub mod response;

pub use decode::{BodyDecoder, DecodeStep};
pub use encode::{ResponseFraming, ResponseHead};
pub use parse::HeadParser;
