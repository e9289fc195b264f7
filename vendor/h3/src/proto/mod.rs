pub mod coding;
#[allow(dead_code)]
pub mod frame;
#[allow(dead_code)]
pub mod headers;
pub mod push;
pub mod stream;
pub mod varint;
