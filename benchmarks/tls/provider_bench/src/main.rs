//! Server-side CPU per full TLS 1.3 handshake (ECDSA P-256, X25519) and bulk record cost,
//! rustls client and server in memory, for the provider chosen by cargo feature. Times are
//! this thread's CPU time (the machine is shared). Usage, from the repository root:
//!
//!     python3 tests/tls_certs.py /tmp/tls-bench-certs
//!     cargo run --release --manifest-path benchmarks/tls/provider_bench/Cargo.toml \
//!         --features aws -- /tmp/tls-bench-certs 2000     # or --features ring
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

/// This thread's CPU time: the machine is shared, so wall time would count other processes.
#[derive(Clone, Copy)]
struct Instant(Duration);
impl Instant {
    fn now() -> Instant {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid timespec for clock_gettime to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Instant(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
    fn elapsed(&self) -> Duration {
        Instant::now().0 - self.0
    }
}

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConnection, ServerConnection};

fn provider() -> CryptoProvider {
    #[cfg(feature = "aws")]
    return rustls::crypto::aws_lc_rs::default_provider();
    #[cfg(all(feature = "ring", not(feature = "aws")))]
    return rustls::crypto::ring::default_provider();
}

fn dir() -> String {
    std::env::args()
        .nth(1)
        .expect("usage: tls-provider-bench CERT_DIR [HANDSHAKES]")
}

fn configs(suite: Option<&str>) -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let mut p = provider();
    if let Some(s) = suite {
        p.cipher_suites
            .retain(|cs| format!("{:?}", cs.suite()) == s);
        assert_eq!(p.cipher_suites.len(), 1, "{s}");
    }
    let p = Arc::new(p);
    let certs: Vec<CertificateDer> =
        CertificateDer::pem_file_iter(format!("{}/server-chain.pem", dir()))
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
    let key = PrivateKeyDer::from_pem_file(format!("{}/server.key", dir())).unwrap();
    let srv = rustls::ServerConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(format!("{}/ca.pem", dir())).unwrap())
        .unwrap();
    let mut cli = rustls::ClientConfig::builder_with_provider(p)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cli.resumption = rustls::client::Resumption::disabled();
    (Arc::new(srv), Arc::new(cli))
}

/// Moves client->server and server->client bytes until both finish the handshake; returns the
/// time spent inside server calls.
fn handshake(
    srv: &mut ServerConnection,
    cli: &mut ClientConnection,
    buf: &mut Vec<u8>,
) -> Duration {
    let mut in_server = Duration::ZERO;
    while srv.is_handshaking() || cli.is_handshaking() {
        buf.clear();
        while cli.wants_write() {
            cli.write_tls(buf).unwrap();
        }
        let t = Instant::now();
        let mut rd = &buf[..];
        while !rd.is_empty() {
            srv.read_tls(&mut rd).unwrap();
            srv.process_new_packets().unwrap();
        }
        buf.clear();
        while srv.wants_write() {
            srv.write_tls(buf).unwrap();
        }
        in_server += t.elapsed();
        let mut rd = &buf[..];
        while !rd.is_empty() {
            cli.read_tls(&mut rd).unwrap();
            cli.process_new_packets().unwrap();
        }
    }
    in_server
}

fn main() {
    let name = if cfg!(feature = "aws") {
        "aws-lc-rs"
    } else {
        "ring"
    };
    let n: u32 = std::env::args()
        .nth(2)
        .map(|a| a.parse().unwrap())
        .unwrap_or(2000);
    let (srv_cfg, cli_cfg) = configs(None);
    let sn = ServerName::try_from("localhost").unwrap();
    let mut buf = Vec::with_capacity(64 * 1024);
    // Warm up, then measure.
    let mut server_time = Duration::ZERO;
    for i in 0..(n + 100) {
        let mut cli = ClientConnection::new(cli_cfg.clone(), sn.clone()).unwrap();
        let mut srv = ServerConnection::new(srv_cfg.clone()).unwrap();
        let t = handshake(&mut srv, &mut cli, &mut buf);
        if i >= 100 {
            server_time += t;
        }
    }
    println!(
        "{name}: full TLS1.3 handshake (ECDSA P-256, {:?}): server {:.1} us/handshake (n={n})",
        cli_cfg.crypto_provider().kx_groups[0].name(),
        server_time.as_secs_f64() * 1e6 / n as f64
    );

    for suite in [
        "TLS13_AES_128_GCM_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256",
        "TLS13_AES_256_GCM_SHA384",
    ] {
        let (srv_cfg, cli_cfg) = configs(Some(suite));
        let mut cli = ClientConnection::new(cli_cfg, sn.clone()).unwrap();
        let mut srv = ServerConnection::new(srv_cfg).unwrap();
        handshake(&mut srv, &mut cli, &mut buf);
        let chunk = vec![0x5au8; 16 * 1024];
        let mut sink = vec![0u8; 64 * 1024];
        let total: usize = 256 << 20;
        let (mut enc, mut dec) = (Duration::ZERO, Duration::ZERO);
        let mut sent = 0;
        while sent < total {
            let t = Instant::now();
            srv.writer().write_all(&chunk).unwrap();
            buf.clear();
            while srv.wants_write() {
                srv.write_tls(&mut buf).unwrap();
            }
            enc += t.elapsed();
            let t = Instant::now();
            let mut rd = &buf[..];
            while !rd.is_empty() {
                cli.read_tls(&mut rd).unwrap();
                cli.process_new_packets().unwrap();
                while let Ok(k) = cli.reader().read(&mut sink) {
                    if k == 0 {
                        break;
                    }
                }
            }
            dec += t.elapsed();
            sent += chunk.len();
        }
        let mb = total as f64 / 1e6;
        println!(
            "{name}: {suite} 16 KiB records: encrypt {:.0} MB/s, decrypt {:.0} MB/s",
            mb / enc.as_secs_f64(),
            mb / dec.as_secs_f64()
        );
    }
}
