//! The QUIC side of a TLS listener: its UDP socket ([`bind_udp`]), its QUIC server
//! configuration ([`server_config`]: the listener's own rustls configuration, so the same
//! certificate, client-certificate rule, provider and ticket key, with ALPN `h3`; QUIC is TLS
//! 1.3 only; 0-RTT only with `--http3-0rtt`: [`early_data`]), its transport limits and
//! congestion controller (`--http3-congestion`), and the
//! `Alt-Svc` value HTTP/1.1 and HTTP/2 answers advertise it with ([`alt_svc_static`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{IdleTimeout, TransportConfig, VarInt};

use crate::config::{Config, Http3Congestion};

/// A stream's receive window: the most request body buffered for one stream the app has not
/// read yet (as HTTP/2's `STREAM_WINDOW`).
const STREAM_WINDOW: u32 = 1024 * 1024;
/// A connection's receive window: several streams' worth (as HTTP/2's).
const CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;
/// The most one connection keeps unacknowledged (quinn's send window; its default, 10 MiB,
/// let a client that stops acknowledging pin about 11.7 MiB per connection). 4 MiB is 1.6 s
/// of a 20 Mbit/s link, several round trips of a lossy one.
pub const SEND_WINDOW: u64 = 4 * 1024 * 1024;
/// The most all of a process's connections keep unacknowledged: each connection's window is
/// its share among those open (`progress.rs` sets it again as they come and go).
pub const SEND_WINDOW_PER_PROCESS: u64 = 64 * 1024 * 1024;
/// The least share: past 1,024 connections the process's total grows by this per connection.
const SEND_WINDOW_FLOOR: u64 = 64 * 1024;

/// A connection's send window with `open` connections open in the process.
pub fn send_window(open: u64) -> u64 {
    (SEND_WINDOW_PER_PROCESS / open.max(1)).clamp(SEND_WINDOW_FLOOR, SEND_WINDOW)
}

/// Unidirectional streams a client may open: HTTP/3 needs three (control, QPACK encoder and
/// decoder); a few more for the reserved (grease) streams clients send.
const UNI_STREAMS: u32 = 8;
/// A peer silent this long is gone (QUIC's idle timeout); the idle timeout between requests
/// is `--keep-alive`'s, kept by each connection's task (`conn.rs`), as on HTTP/2.
const PEER_SILENCE: Duration = Duration::from_secs(30);
/// The server pings every connection this often, so that a client waiting for a slow answer
/// does not reach [`PEER_SILENCE`].
const KEEP_ALIVE_PING: Duration = Duration::from_secs(10);

/// Sessions kept for resumption (and 0-RTT) with `--http3-0rtt`, per listener and process:
/// each handshake leaves two tickets, each an entry (a few hundred bytes), so the TLS side's
/// 256-entry cache (TLS 1.2 session IDs) would be turned over by 128 handshakes.
const EARLY_SESSIONS: usize = 4096;

/// A UDP socket on `addr` for QUIC. `SO_REUSEPORT`: each worker process binds its own on the
/// same port, and the kernel spreads clients by address.
pub fn bind_udp(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let domain = socket2::Domain::for_address(addr);
    let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// The QUIC configuration of a listener whose TLS configuration is `tls`.
pub fn server_config(
    tls: &rustls::ServerConfig,
    config: &Config,
) -> std::io::Result<quinn::ServerConfig> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    early_data(&mut tls, config.http3_0rtt);
    let crypto = QuicServerConfig::try_from(tls)
        .map_err(|e| std::io::Error::other(format!("QUIC needs TLS 1.3: {e}")))?;
    let mut server =
        quinn::ServerConfig::with_crypto(Arc::new(super::tls_facts::FactsConfig(Arc::new(crypto))));
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(stream_credit(config.http2_max_streams)))
        .max_concurrent_uni_streams(VarInt::from_u32(UNI_STREAMS))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONNECTION_WINDOW))
        .send_window(SEND_WINDOW)
        .max_idle_timeout(Some(
            IdleTimeout::try_from(PEER_SILENCE).expect("a 30 s idle timeout fits"),
        ))
        .keep_alive_interval(Some(KEEP_ALIVE_PING));
    congestion(&mut transport, config.http3_congestion);
    server.transport_config(Arc::new(transport));
    Ok(server)
}

/// `--http3-congestion`: quinn's controller, each with quinn's defaults.
fn congestion(transport: &mut TransportConfig, which: Http3Congestion) {
    use quinn::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
    match which {
        Http3Congestion::Cubic => {
            transport.congestion_controller_factory(Arc::new(CubicConfig::default()))
        }
        Http3Congestion::NewReno => {
            transport.congestion_controller_factory(Arc::new(NewRenoConfig::default()))
        }
        Http3Congestion::Bbr => {
            transport.congestion_controller_factory(Arc::new(BbrConfig::default()))
        }
    };
}

/// 0-RTT (`--http3-0rtt`) or not. rustls accepts early data only with a ticket that can be
/// used once: a session kept in the server's memory (its `session_storage`, whose `take` makes
/// a replay of the same ClientHello resume nothing), never a stateless ticket (which any number
/// of copies could present). So with 0-RTT the QUIC side issues no stateless tickets, and
/// QUIC requires the early-data size to be `u32::MAX` or 0 (RFC 9001 §4.6.1).
fn early_data(tls: &mut rustls::ServerConfig, on: bool) {
    if on {
        tls.max_early_data_size = u32::MAX;
        tls.ticketer = Arc::new(NoTickets);
        tls.session_storage = rustls::server::ServerSessionMemoryCache::new(EARLY_SESSIONS);
    } else {
        tls.max_early_data_size = 0;
    }
}

/// A ticketer that makes no tickets: resumption from the session cache only.
#[derive(Debug)]
struct NoTickets;

impl rustls::server::ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }

    fn lifetime(&self) -> u32 {
        0
    }

    fn encrypt(&self, _plain: &[u8]) -> Option<Vec<u8>> {
        None
    }

    fn decrypt(&self, _cipher: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// The `Alt-Svc` field value that tells a client HTTP/3 is on `port` (for a day), as a
/// `'static` slice the answers' heads borrow: each port's is made once per process (a process
/// that starts and stops servers reuses it).
pub fn alt_svc_static(port: u16) -> &'static [u8] {
    static MADE: std::sync::Mutex<Vec<(u16, &'static [u8])>> = std::sync::Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap();
    if let Some(&(_, known)) = made.iter().find(|(p, _)| *p == port) {
        return known;
    }
    let value = format!("h3=\":{port}\"; ma=86400").into_bytes();
    let leaked: &'static [u8] = Box::leak(value.into_boxed_slice());
    made.push((port, leaked));
    leaked
}

/// The QUIC stream credit for `--http2-max-streams` N: N and a quarter more (at least one).
/// HTTP/2 lets a client open a new stream as soon as an answer's END_STREAM arrives; QUIC gives
/// a stream's credit back only once the client has acknowledged the answer's end and the
/// server's MAX_STREAMS has reached it, a round trip and the client's ACK delay later. Without
/// the slack a client that keeps N streams busy waits that long for each new one (S17a: 894
/// req/s at credit N, 966 with room, HTTP/2's figure).
pub fn stream_credit(max_streams: u32) -> u32 {
    max_streams.saturating_add((max_streams / 4).max(1))
}
