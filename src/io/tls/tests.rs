//! A rustls client against a [`TlsSession`] in memory: handshakes, data both ways, client
//! certificates per mode, record sizes, backpressure, and hostile input (garbage, plain HTTP).

use std::io::{IoSlice, Read, Write};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use super::config::tests::{settings, testdata, NOW};
use super::config::{self, provider, ClientAuth, MinVersion, TlsSettings};
use super::session::{
    Plaintext, TlsError, TlsSession, TlsState, RECEIVED_PLAINTEXT_LIMIT, SMALL_RECORD,
    SMALL_RECORDS_BYTES,
};

fn certs(name: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(testdata(name))
        .unwrap()
        .map(|c| c.unwrap())
        .collect()
}

fn client_config(
    versions: &[&'static rustls::SupportedProtocolVersion],
    client_cert: Option<(&str, &str)>,
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(certs("ca.pem").remove(0)).unwrap();
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                certs(cert),
                PrivateKeyDer::from_pem_file(testdata(key)).unwrap(),
            )
            .unwrap(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

fn tls13_client() -> Arc<ClientConfig> {
    client_config(&[&rustls::version::TLS13], None)
}

fn server(settings: &TlsSettings) -> TlsSession {
    TlsSession::new(config::load(settings, NOW).unwrap().server).unwrap()
}

fn client(config: Arc<ClientConfig>) -> ClientConnection {
    ClientConnection::new(config, ServerName::try_from("localhost").unwrap()).unwrap()
}

/// How the pump hands the server its ciphertext (CONTRIBUTING.md, "Tests": every input fed three ways).
#[derive(Clone, Copy)]
enum Feeding {
    Whole,
    ByteAtATime,
}

/// Moves bytes both ways until neither side has anything to say. Returns the server's error,
/// if any. Client errors panic: the client is the test's own.
fn pump(
    srv: &mut TlsSession,
    cli: &mut ClientConnection,
    feeding: Feeding,
) -> Result<(), TlsError> {
    for _ in 0..100 {
        let mut to_server = Vec::new();
        while cli.wants_write() {
            cli.write_tls(&mut to_server).unwrap();
        }
        match feeding {
            Feeding::Whole => feed_all(srv, &to_server)?,
            Feeding::ByteAtATime => {
                for b in to_server.chunks(1) {
                    feed_all(srv, b)?;
                }
            }
        }
        let mut to_client = Vec::new();
        srv.take_ciphertext(&mut to_client);
        if to_server.is_empty() && to_client.is_empty() {
            return Ok(());
        }
        let mut rd = &to_client[..];
        while !rd.is_empty() {
            cli.read_tls(&mut rd).unwrap();
            cli.process_new_packets().unwrap();
        }
    }
    panic!("no quiet after 100 rounds");
}

fn feed_all(srv: &mut TlsSession, mut bytes: &[u8]) -> Result<(), TlsError> {
    while !bytes.is_empty() {
        let n = srv.feed(bytes)?;
        assert!(n > 0, "plaintext limit reached: the test reads too late");
        bytes = &bytes[n..];
    }
    Ok(())
}

fn server_reads_all(srv: &mut TlsSession) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Plaintext::Data(n) = srv.read_plaintext(&mut buf) {
        out.extend_from_slice(&buf[..n]);
    }
    out
}

fn client_reads_all(cli: &mut ClientConnection) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = cli.reader().read_to_end(&mut out);
    out
}

#[test]
fn handshake_and_data_both_ways_fed_three_ways() {
    for feeding in [Feeding::Whole, Feeding::ByteAtATime] {
        let mut srv = server(&settings());
        let mut cli = client(tls13_client());
        assert_eq!(srv.state(), TlsState::Handshaking);
        assert!(srv.info().is_none());
        cli.writer()
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        pump(&mut srv, &mut cli, feeding).unwrap();
        assert_eq!(srv.state(), TlsState::Established);
        assert_eq!(
            server_reads_all(&mut srv),
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        );

        srv.start_response();
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        let n = srv.write_plaintext(&[IoSlice::new(head), IoSlice::new(b"hello")]);
        assert_eq!(n, head.len() + 5);
        pump(&mut srv, &mut cli, feeding).unwrap();
        let got = client_reads_all(&mut cli);
        assert!(got.ends_with(b"\r\n\r\nhello"));

        let info = srv.info().unwrap();
        assert_eq!(info.protocol, "TLSv1.3");
        assert!(info.cipher.starts_with("TLS_"), "{}", info.cipher);
        assert_eq!(info.server_name.as_deref(), Some("localhost"));
        assert_eq!(info.alpn.as_deref(), Some(&b"http/1.1"[..]));
        assert!(!info.resumed);
        assert_eq!(info.verify(), "NONE");
    }
}

#[test]
fn records_split_anywhere_give_the_same_plaintext() {
    // Two pipelined requests in two records, the ciphertext cut at the start, in the middle of
    // a record header, in the middle of a record and one byte before the end.
    let requests = b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
    for cut in [1usize, 3, 40, usize::MAX] {
        let mut srv = server(&settings());
        let mut cli = client(tls13_client());
        pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
        cli.writer().write_all(&requests[..19]).unwrap();
        cli.writer().write_all(&requests[19..]).unwrap();
        let mut wire = Vec::new();
        while cli.wants_write() {
            cli.write_tls(&mut wire).unwrap();
        }
        let cut = cut.min(wire.len() - 1);
        feed_all(&mut srv, &wire[..cut]).unwrap();
        feed_all(&mut srv, &wire[cut..]).unwrap();
        assert_eq!(server_reads_all(&mut srv), requests);
    }
}

#[test]
fn tls12_facts_as_mod_ssl_names_them() {
    let mut srv = server(&settings());
    let mut cli = client(client_config(&[&rustls::version::TLS12], None));
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    let info = srv.info().unwrap();
    assert_eq!(info.protocol, "TLSv1.2");
    assert!(info.cipher.starts_with("ECDHE-ECDSA-"), "{}", info.cipher);
}

#[test]
fn min_version_13_refuses_a_tls12_client() {
    let mut srv = server(&TlsSettings {
        min_version: MinVersion::Tls13,
        ..settings()
    });
    let mut cli = client(client_config(&[&rustls::version::TLS12], None));
    let mut hello = Vec::new();
    cli.write_tls(&mut hello).unwrap();
    let err = srv.feed(&hello).unwrap_err();
    assert_eq!(err.reason(), "incompatible", "{err}");
    // An alert is queued for the loop to send before closing.
    assert!(srv.wants_write());
}

fn mtls(mode: ClientAuth) -> TlsSettings {
    TlsSettings {
        ca_file: Some(testdata("ca.pem")),
        client_auth: mode,
        ..settings()
    }
}

/// Runs a handshake; the server's error if it refused. (A client refused after its Finished
/// (TLS 1.3) learns it from the alert: the server's side is what matters here.)
fn handshake_result(
    settings: &TlsSettings,
    client_cfg: Arc<ClientConfig>,
) -> (TlsSession, Result<(), TlsError>) {
    let mut srv = server(settings);
    let mut cli = client(client_cfg);
    let mut result = Ok(());
    for _ in 0..10 {
        let mut to_server = Vec::new();
        while cli.wants_write() {
            cli.write_tls(&mut to_server).unwrap();
        }
        if let Err(e) = feed_all(&mut srv, &to_server) {
            result = Err(e);
            break;
        }
        let mut to_client = Vec::new();
        srv.take_ciphertext(&mut to_client);
        if to_client.is_empty() && to_server.is_empty() {
            break;
        }
        let mut rd = &to_client[..];
        while !rd.is_empty() {
            cli.read_tls(&mut rd).unwrap();
            if cli.process_new_packets().is_err() {
                break;
            }
        }
    }
    (srv, result)
}

#[test]
fn required_client_certificate_verified_and_in_the_facts() {
    let cfg = client_config(
        &[&rustls::version::TLS13],
        Some(("client.pem", "client.key")),
    );
    let (srv, result) = handshake_result(&mtls(ClientAuth::Required), cfg);
    result.unwrap();
    let info = srv.info().unwrap();
    assert_eq!(info.verify(), "SUCCESS");
    let cert = info.client_cert.unwrap();
    assert_eq!(
        cert.subject_dn,
        "CN=sluicegate-test-client,O=sluicegate tests"
    );
    assert_eq!(cert.issuer_dn, "CN=sluicegate test CA");
    assert_eq!(
        cert.pem,
        std::fs::read_to_string(testdata("client.pem")).unwrap()
    );
}

#[test]
fn required_refuses_a_client_without_certificate() {
    let (_, result) = handshake_result(&mtls(ClientAuth::Required), tls13_client());
    assert_eq!(result.unwrap_err().reason(), "no_client_certificate");
}

#[test]
fn optional_serves_a_client_without_certificate() {
    let (srv, result) = handshake_result(&mtls(ClientAuth::Optional), tls13_client());
    result.unwrap();
    assert_eq!(srv.info().unwrap().verify(), "NONE");
}

#[test]
fn optional_still_refuses_a_certificate_that_does_not_verify() {
    // The server's own certificate: issued by the intermediate, which the CA file alone does
    // not reach, and for serverAuth only.
    let cfg = client_config(
        &[&rustls::version::TLS13],
        Some(("server-chain.pem", "server.key")),
    );
    for mode in [ClientAuth::Optional, ClientAuth::Required] {
        let (_, result) = handshake_result(&mtls(mode), cfg.clone());
        assert_eq!(result.unwrap_err().reason(), "bad_client_certificate");
    }
}

#[test]
fn plain_http_on_the_tls_port_is_recognised() {
    for first in [&b"GET / HTTP/1.1\r\n"[..], b"P", b"HEAD /"] {
        let mut srv = server(&settings());
        assert!(matches!(srv.feed(first), Err(TlsError::PlainHttp)));
    }
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    // A small xorshift generator: the same inputs every run.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut hello = Vec::new();
    client(tls13_client()).write_tls(&mut hello).unwrap();
    for round in 0..300 {
        let mut srv = server(&settings());
        let mut bytes: Vec<u8> = (0..(next() % 600)).map(|_| next() as u8).collect();
        match round % 3 {
            // A handshake record header, then noise.
            0 => bytes
                .splice(0..0, [0x16, 0x03, 0x01, 0x02, 0x00])
                .for_each(drop),
            // A real ClientHello with bytes flipped.
            1 => {
                bytes = hello.clone();
                for _ in 0..3 {
                    let i = (next() as usize) % bytes.len();
                    bytes[i] ^= (next() as u8) | 1;
                }
            }
            _ => {}
        }
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            match srv.feed(rest) {
                Ok(0) | Err(_) => break,
                Ok(n) => rest = &rest[n..],
            }
        }
        let mut sink = Vec::new();
        srv.take_ciphertext(&mut sink);
        let _ = srv.read_plaintext(&mut [0u8; 64]);
    }
}

/// Record lengths in a TLS byte stream (after the handshake).
fn record_lengths(mut wire: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    while wire.len() >= 5 {
        let len = usize::from(u16::from_be_bytes([wire[3], wire[4]]));
        out.push(len);
        wire = &wire[5 + len..];
    }
    out
}

#[test]
fn records_start_small_and_grow_to_16k() {
    let mut srv = server(&settings());
    let mut cli = client(tls13_client());
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    let mut skip = Vec::new();
    srv.take_ciphertext(&mut skip); // session tickets
    let body = vec![b'x'; 64 * 1024];
    srv.start_response();
    // Four writes of 16 KiB: records stay small for the first SMALL_RECORDS_BYTES.
    let mut wire = Vec::new();
    for piece in body.chunks(16 * 1024) {
        assert_eq!(srv.write_plaintext(&[IoSlice::new(piece)]), piece.len());
        srv.take_ciphertext(&mut wire);
    }
    let lens = record_lengths(&wire);
    // TLS 1.3 AES-GCM: 1 content-type byte + 16 tag bytes per record.
    let small = SMALL_RECORDS_BYTES.div_ceil(SMALL_RECORD);
    assert!(
        lens[..small].iter().all(|&l| l == SMALL_RECORD + 17),
        "{lens:?}"
    );
    assert!(
        lens[small..].iter().all(|&l| l <= 16 * 1024 + 17),
        "{lens:?}"
    );
    assert!(lens.contains(&(16 * 1024 + 17)), "{lens:?}");
    // A new response ramps again.
    srv.start_response();
    srv.write_plaintext(&[IoSlice::new(&body[..3000])]);
    let mut wire = Vec::new();
    srv.take_ciphertext(&mut wire);
    assert_eq!(
        record_lengths(&wire),
        [SMALL_RECORD + 17, SMALL_RECORD + 17, 280 + 17]
    );
}

#[test]
fn a_head_and_its_file_body_share_a_record() {
    // Regression: the head left alone (its own record and writev), then the file.
    use crate::io::out_queue::OutQueue;
    let path = std::env::temp_dir().join(format!("sg-tls-head-file-{}", std::process::id()));
    std::fs::write(&path, vec![b'f'; 3000]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n";
    let mut q = OutQueue::new();
    q.push_copy(head);
    q.push_file(file, 0, 3000);
    q.push_copy(b"tail");

    let mut srv = server(&settings());
    let mut cli = client(tls13_client());
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    let mut skip = Vec::new();
    srv.take_ciphertext(&mut skip); // session tickets
    srv.start_response();
    let mut calls = 0;
    // No cork in the queue: the descriptor is never used.
    let taken = q
        .encrypt_with(-1, &mut |slices| {
            calls += 1;
            srv.write_plaintext(slices)
        })
        .unwrap();
    assert_eq!((calls, taken), (1, head.len() + 3000));
    let mut wire = Vec::new();
    srv.take_ciphertext(&mut wire);
    let total = head.len() + 3000;
    assert_eq!(
        record_lengths(&wire),
        [
            SMALL_RECORD + 17,
            SMALL_RECORD + 17,
            total - 2 * SMALL_RECORD + 17
        ]
    );
    // What follows the file goes in the next call.
    assert_eq!(
        q.encrypt_with(-1, &mut |s| srv.write_plaintext(s)).unwrap(),
        4
    );
    assert!(q.is_empty());
}

#[test]
fn a_slow_reader_meets_backpressure() {
    let mut srv = server(&settings());
    let mut cli = client(tls13_client());
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    let mut skip = Vec::new();
    srv.take_ciphertext(&mut skip);
    let body = vec![b'y'; 1024 * 1024];
    srv.start_response();
    let taken = srv.write_plaintext(&[IoSlice::new(&body)]);
    assert!(taken < 100 * 1024, "took {taken} bytes past the limit");
    assert_eq!(srv.write_plaintext(&[IoSlice::new(&body[taken..])]), 0);
    let mut wire = Vec::new();
    srv.take_ciphertext(&mut wire);
    assert!(srv.write_plaintext(&[IoSlice::new(&body[taken..])]) > 0);
}

#[test]
fn close_notify_both_ways() {
    let mut srv = server(&settings());
    let mut cli = client(tls13_client());
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    cli.send_close_notify();
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    assert_eq!(srv.state(), TlsState::PeerClosed);
    assert_eq!(srv.read_plaintext(&mut [0u8; 16]), Plaintext::Closed);

    let mut srv = server(&settings());
    let mut cli = client(tls13_client());
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    srv.close_notify();
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(cli.reader().read(&mut buf).unwrap(), 0); // clean EOF
}

#[test]
fn resumption_with_a_ticket() {
    let cfg = config::load(&settings(), NOW).unwrap().server;
    let client_cfg = tls13_client();
    for expect_resumed in [false, true] {
        let mut srv = TlsSession::new(cfg.clone()).unwrap();
        let mut cli = client(client_cfg.clone());
        pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
        assert_eq!(srv.info().unwrap().resumed, expect_resumed);
    }
}

#[test]
fn plaintext_backlog_stops_feeding_until_taken() {
    let mut srv = server(&settings());
    let mut cli = client(tls13_client());
    cli.set_buffer_limit(None);
    pump(&mut srv, &mut cli, Feeding::Whole).unwrap();
    let upload = vec![b'u'; 100 * 1024];
    cli.writer().write_all(&upload).unwrap();
    let mut wire = Vec::new();
    while cli.wants_write() {
        cli.write_tls(&mut wire).unwrap();
    }
    let mut rest = &wire[..];
    let mut got = Vec::new();
    let mut stops = 0;
    while !rest.is_empty() {
        let n = srv.feed(rest).unwrap();
        rest = &rest[n..];
        // Stopped at the limit (or done): what waits is bounded, then the loop takes it.
        let backlog = server_reads_all(&mut srv);
        assert!(
            backlog.len() <= RECEIVED_PLAINTEXT_LIMIT + 2 * 4096,
            "{}",
            backlog.len()
        );
        got.extend(backlog);
        stops += 1;
    }
    assert_eq!(got, upload);
    assert!(stops > 1);
}

#[test]
fn the_kept_plaintext_count_matches_what_is_read() {
    // `plaintext_pending` is a count kept from `process_new_packets` less what was read (no
    // call into rustls per look): fed whole or a byte at a time, it says exactly what
    // `read_plaintext` then gives, down to 0.
    for feeding in [Feeding::Whole, Feeding::ByteAtATime] {
        let mut srv = server(&settings());
        let mut cli = client(tls13_client());
        pump(&mut srv, &mut cli, feeding).unwrap();
        assert_eq!(srv.plaintext_pending(), 0);
        cli.writer().write_all(&[b'a'; 5000]).unwrap();
        cli.writer().write_all(&[b'b'; 3000]).unwrap();
        let mut wire = Vec::new();
        while cli.wants_write() {
            cli.write_tls(&mut wire).unwrap();
        }
        match feeding {
            Feeding::Whole => feed_all(&mut srv, &wire).unwrap(),
            Feeding::ByteAtATime => wire.chunks(1).for_each(|b| feed_all(&mut srv, b).unwrap()),
        }
        let mut left = 8000;
        assert_eq!(srv.plaintext_pending(), left);
        let mut buf = [0u8; 1500];
        while let Plaintext::Data(n) = srv.read_plaintext(&mut buf) {
            left -= n;
            assert_eq!(srv.plaintext_pending(), left);
        }
        assert_eq!(left, 0);
    }
}
