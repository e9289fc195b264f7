//! The environ's TLS facts of an HTTP/3 connection (`SSL_PROTOCOL`, `SSL_CIPHER`,
//! `SSL_SESSION_RESUMED`, `SSL_TLS_SNI`, the client certificate: the same [`TlsFacts`] an
//! HTTP/1.1 or HTTP/2 connection over TLS gives).
//!
//! quinn's rustls session tells the ALPN, the server name and the peer's certificates, not the
//! cipher suite nor whether the session was resumed. Both are in the ServerHello the session
//! writes: [`FactsConfig`] wraps quinn's server crypto configuration, and each session it
//! starts ([`FactsSession`]) reads its own ServerHello as it is written (RFC 8446 §4.1.3: the
//! cipher suite, and the `pre_shared_key` extension when a ticket was accepted), then hands
//! them out through `handshake_data` as [`Handshake`]. Everything else is quinn's session,
//! called through.

use std::any::Any;
use std::sync::Arc;

use quinn::crypto::rustls::{HandshakeData, QuicServerConfig};
use quinn::crypto::{
    self, ExportKeyingMaterialError, KeyPair, Keys, PacketKey, UnsupportedVersion,
};
use quinn::ConnectionId;
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::TransportError;
use rustls::pki_types::CertificateDer;
use rustls::CipherSuite;

use crate::io::tls::session::openssl_cipher_name;
use crate::io::tls::{ClientCert, TlsInfo};
use crate::io::tls_link::TlsFacts;

/// quinn's server crypto configuration, whose sessions report their ServerHello's facts.
pub struct FactsConfig(pub Arc<QuicServerConfig>);

impl crypto::ServerConfig for FactsConfig {
    fn initial_keys(
        &self,
        version: u32,
        dst_cid: &ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        self.0.initial_keys(version, dst_cid)
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.0.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(
        self: Arc<Self>,
        version: u32,
        params: &TransportParameters,
    ) -> Box<dyn crypto::Session> {
        let inner = Arc::clone(&self.0).start_session(version, params);
        Box::new(FactsSession { inner, hello: None })
    }
}

/// What the ServerHello said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hello {
    suite: CipherSuite,
    resumed: bool,
}

/// A connection's handshake facts (`quinn::Connection::handshake_data`'s type here).
#[derive(Clone, Debug)]
pub struct Handshake {
    pub server_name: Option<String>,
    pub alpn: Option<Vec<u8>>,
    /// `None`: no ServerHello written yet.
    pub suite: Option<CipherSuite>,
    pub resumed: bool,
}

/// One connection's TLS session: quinn's, with its ServerHello read as it is written.
struct FactsSession {
    inner: Box<dyn crypto::Session>,
    hello: Option<Hello>,
}

/// `HelloRetryRequest`'s fixed random (RFC 8446 §4.1.3): a ServerHello that is not the one.
const HRR_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];
/// The handshake message type of a ServerHello.
const SERVER_HELLO: u8 = 2;
/// The `pre_shared_key` extension: in a ServerHello, the server resumed a session.
const PRE_SHARED_KEY: u16 = 41;

/// The cipher suite and resumption of a ServerHello at the start of `msg` (a handshake
/// message as TLS 1.3 writes it), or `None` if `msg` does not start with one (or it is a
/// HelloRetryRequest).
fn server_hello(msg: &[u8]) -> Option<Hello> {
    let u16_at = |i: usize| Some(u16::from_be_bytes([*msg.get(i)?, *msg.get(i + 1)?]));
    if *msg.first()? != SERVER_HELLO || msg.get(6..38)? == HRR_RANDOM {
        return None;
    }
    // type(1) length(3) legacy_version(2) random(32) session_id(1 + n)
    let suite_at = 39 + usize::from(*msg.get(38)?);
    let suite = CipherSuite::from(u16_at(suite_at)?);
    // cipher_suite(2) compression(1) extensions length(2), then (type, length, data)*
    let mut at = suite_at + 5;
    let end = (at + usize::from(u16_at(suite_at + 3)?)).min(msg.len());
    let mut resumed = false;
    while at + 4 <= end {
        resumed |= u16_at(at)? == PRE_SHARED_KEY;
        at += 4 + usize::from(u16_at(at + 2)?);
    }
    Some(Hello { suite, resumed })
}

impl crypto::Session for FactsSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: quinn::Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        let data = self
            .inner
            .handshake_data()?
            .downcast::<HandshakeData>()
            .ok()?;
        Some(Box::new(Handshake {
            server_name: data.server_name,
            alpn: data.protocol,
            suite: self.hello.map(|h| h.suite),
            resumed: self.hello.is_some_and(|h| h.resumed),
        }))
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn crypto::HeaderKey>, Box<dyn PacketKey>)> {
        self.inner.early_crypto()
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.inner.read_handshake(buf)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.inner.transport_parameters()
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let start = buf.len();
        let keys = self.inner.write_handshake(buf);
        if self.hello.is_none() {
            self.hello = server_hello(&buf[start..]);
        }
        keys
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.inner.next_1rtt_keys()
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

/// The environ's TLS facts of `conn` as it is now: the client certificate only once the
/// handshake is complete (a request served in 0-RTT has none yet). `None` before the
/// ClientHello was read.
pub fn facts(conn: &quinn::Connection) -> Option<Arc<TlsFacts>> {
    let hs = conn.handshake_data()?.downcast::<Handshake>().ok()?;
    let client_cert = conn
        .peer_identity()
        .and_then(|id| id.downcast::<Vec<CertificateDer<'static>>>().ok())
        .and_then(|certs| Some(ClientCert::of(certs.first()?)));
    Some(Arc::new(TlsFacts::of(TlsInfo {
        // QUIC is TLS 1.3 only (RFC 9001 §4.2).
        protocol: "TLSv1.3",
        cipher: hs.suite.map_or("unknown", openssl_cipher_name),
        server_name: hs.server_name,
        alpn: hs.alpn,
        resumed: hs.resumed,
        client_cert,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ServerHello as TLS 1.3 writes it: `session_id` bytes, the suite, the extensions'
    /// types (each with two bytes of data).
    fn hello(session_id: &[u8], suite: u16, exts: &[u16], random: [u8; 32]) -> Vec<u8> {
        let mut body = vec![0x03, 0x03];
        body.extend_from_slice(&random);
        body.push(session_id.len() as u8);
        body.extend_from_slice(session_id);
        body.extend_from_slice(&suite.to_be_bytes());
        body.push(0);
        let mut ext = Vec::new();
        for t in exts {
            ext.extend_from_slice(&t.to_be_bytes());
            ext.extend_from_slice(&[0, 2, 0x03, 0x04]);
        }
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let len = (body.len() as u32).to_be_bytes();
        let mut msg = vec![SERVER_HELLO, len[1], len[2], len[3]];
        msg.extend_from_slice(&body);
        msg
    }

    #[test]
    fn a_server_hello_tells_its_suite_and_whether_a_ticket_was_taken() {
        let full = hello(&[], 0x1301, &[43, 51], [7; 32]);
        assert_eq!(
            server_hello(&full),
            Some(Hello {
                suite: CipherSuite::TLS13_AES_128_GCM_SHA256,
                resumed: false
            })
        );
        let resumed = hello(&[1, 2, 3], 0x1302, &[43, 51, 41], [7; 32]);
        assert_eq!(
            server_hello(&resumed),
            Some(Hello {
                suite: CipherSuite::TLS13_AES_256_GCM_SHA384,
                resumed: true
            })
        );
    }

    #[test]
    fn a_retry_request_another_message_or_cut_bytes_tell_nothing() {
        assert_eq!(server_hello(&hello(&[], 0x1301, &[43], HRR_RANDOM)), None);
        let mut other = hello(&[], 0x1301, &[43], [7; 32]);
        other[0] = 8;
        assert_eq!(server_hello(&other), None);
        let whole = hello(&[], 0x1303, &[41], [7; 32]);
        for cut in 0..40 {
            assert_eq!(server_hello(&whole[..cut]), None, "{cut}");
        }
        // Cut inside the extensions: the suite is known, the rest read as far as it goes.
        assert!(server_hello(&whole[..whole.len() - 3]).is_some());
    }
}
