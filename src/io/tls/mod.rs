//! TLS for the I/O layer, sans-I/O over rustls: this module knows no sockets; the event loop
//! feeds it ciphertext and writes what it returns (docs/tls.md).
//!
//! - [`config`]: reads and checks certificate and key files, builds the `rustls::ServerConfig`.
//! - [`session`]: one connection — feed ciphertext, take plaintext, queue plaintext, take
//!   ciphertext, and the environ's facts (`SSL_PROTOCOL`, `SSL_CIPHER`, client certificate).
//! - [`refusals`]: refused client certificates told in the error log, once per peer and
//!   reason, rate-limited.
//! - [`x509`]: the few certificate fields read here (names, validity, signature), and PEM.

pub mod config;
pub mod refusals;
pub mod session;
pub mod x509;

#[cfg(test)]
mod tests;

pub use config::{load, ClientAuth, MinVersion, TlsConfig, TlsConfigError, TlsSettings};
pub use session::{ClientCert, Plaintext, TlsError, TlsInfo, TlsSession, TlsState};
