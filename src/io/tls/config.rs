//! Builds the one `rustls::ServerConfig` a TLS listener serves with, from plain values (file
//! paths, client-certificate mode, minimum version, ALPN), and checks the files first: before
//! binding, before `--user` drops privileges, and again on HUP. Every problem is one line that
//! names the file: `server.pem: certificate 1 (CN=example.com) expired at 2026-11-24 …`, and a
//! PEM syntax error is said in words (never as the bytes of a label).
//!
//! Checked: PEM syntax; encrypted keys (refused: a server started by systemd cannot type a
//! passphrase); the key matches the first certificate; chain order (leaf first, each
//! certificate issued by the next: names compared, signatures verified where the provider has
//! the algorithm); the validity window of every certificate served (expired, or not valid
//! yet: every client would refuse it). Not checked: that the chain reaches a trusted root (the
//! server does not know which roots its clients trust).
//!
//! Cipher suites, key-exchange groups and session resumption are rustls's defaults (see
//! docs/tls.md): TLS 1.3 tickets from a rotating ticketer (a 6-hour key made in this process;
//! made before the workers fork, so every worker accepts the others' tickets until the first
//! rotation) and a 256-entry session cache for TLS 1.2 session ids.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{Error as RustlsError, InconsistentKeys, RootCertStore, ServerConfig};

use super::x509::Cert;

/// TLS 1.2 session ids remembered per process (rustls's default size). TLS 1.3 uses tickets,
/// which need no server memory.
pub const SESSION_CACHE_ENTRIES: usize = 256;

// `ClientAuth`, `MinVersion` and `TlsSettings` are plain data: they live in `crate::config`
// (the bottom floor), which the options reach first.
pub use crate::config::{ClientAuth, MinVersion, TlsSettings};

/// A checked configuration, ready to serve connections.
#[derive(Clone)]
pub struct TlsConfig {
    pub server: Arc<ServerConfig>,
    /// The earliest `notAfter` of the certificates served, unix seconds: when clients start
    /// failing (the metric of seconds until the certificate expires).
    pub not_after: i64,
    /// The server certificate's subject, for the start line.
    pub subject: String,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("not_after", &self.not_after)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

/// One line naming the file at fault (if one is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfigError {
    pub file: Option<PathBuf>,
    pub message: String,
}

impl TlsConfigError {
    fn in_file(file: &Path, message: impl Into<String>) -> TlsConfigError {
        TlsConfigError {
            file: Some(file.to_path_buf()),
            message: message.into(),
        }
    }
}

impl fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TlsConfigError {}

/// The crypto provider (docs/tls.md: aws-lc-rs, measured against ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Reads and checks the files, then builds the configuration. `now` is unix seconds (a
/// parameter so that tests can move the clock).
pub fn load(settings: &TlsSettings, now: i64) -> Result<TlsConfig, TlsConfigError> {
    let provider = provider();
    let cert_file = &settings.cert_file;
    let certs = read_certs(cert_file)?;
    let not_after = check_chain(cert_file, &certs, &provider, now)?;
    let key = read_key(&settings.key_file)?;

    let signing_key = provider.key_provider.load_private_key(key).map_err(|e| {
        TlsConfigError::in_file(
            &settings.key_file,
            format!("unsupported or malformed private key ({e})"),
        )
    })?;
    let certified = CertifiedKey::new(certs.clone(), signing_key);
    match certified.keys_match() {
        Ok(()) | Err(RustlsError::InconsistentKeys(InconsistentKeys::Unknown)) => {}
        Err(_) => {
            return Err(TlsConfigError::in_file(
                &settings.key_file,
                format!(
                    "this private key does not match the certificate in {}",
                    cert_file.display()
                ),
            ))
        }
    }

    let verifier = match (settings.client_auth, &settings.ca_file) {
        (ClientAuth::None, _) => WebPkiClientVerifier::no_client_auth(),
        (mode, Some(ca_file)) => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs(ca_file)? {
                roots.add(cert).map_err(|e| {
                    TlsConfigError::in_file(ca_file, format!("not a usable CA certificate ({e})"))
                })?;
            }
            let builder =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
            let builder = if mode == ClientAuth::Optional {
                builder.allow_unauthenticated()
            } else {
                builder
            };
            builder.build().map_err(|e| {
                TlsConfigError::in_file(ca_file, format!("cannot verify clients with it ({e})"))
            })?
        }
        (_, None) => {
            return Err(TlsConfigError {
                file: None,
                message: "client certificates (cert-reqs optional or required) need a CA file \
                          (ca-certs) to verify them with"
                    .into(),
            })
        }
    };

    let versions: &[&'static rustls::SupportedProtocolVersion] = match settings.min_version {
        MinVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        MinVersion::Tls13 => &[&rustls::version::TLS13],
    };
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| TlsConfigError {
            file: None,
            message: format!("TLS versions: {e}"),
        })?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
    server.alpn_protocols = settings.alpn.clone();
    server.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES);
    server.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().map_err(|e| TlsConfigError {
        file: None,
        message: format!("cannot make a session ticket key ({e})"),
    })?;

    let subject = Cert::parse(&certs[0])
        .map(|c| c.subject_dn())
        .unwrap_or_default();
    Ok(TlsConfig {
        server: Arc::new(server),
        not_after,
        subject,
    })
}

fn read_file(file: &Path) -> Result<Vec<u8>, TlsConfigError> {
    std::fs::read(file).map_err(|e| TlsConfigError::in_file(file, format!("cannot read ({e})")))
}

/// Every `CERTIFICATE` block of a PEM file, in order; at least one.
fn read_certs(file: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let pem = read_file(file)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsConfigError::in_file(file, pem_error(&e)))?;
    if certs.is_empty() {
        return Err(TlsConfigError::in_file(
            file,
            "no certificate found (expected PEM blocks '-----BEGIN CERTIFICATE-----')",
        ));
    }
    Ok(certs)
}

/// The private key of a PEM file; encrypted keys are refused with a hint.
fn read_key(file: &Path) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    let pem = read_file(file)?;
    // PKCS#8 `ENCRYPTED PRIVATE KEY`, or the traditional OpenSSL form with a `Proc-Type` header.
    let encrypted = |marker: &[u8]| pem.windows(marker.len()).any(|w| w == marker);
    if encrypted(b"-----BEGIN ENCRYPTED PRIVATE KEY-----") || encrypted(b"Proc-Type: 4,ENCRYPTED") {
        return Err(TlsConfigError::in_file(
            file,
            "the private key is encrypted (passphrase-protected), which the server cannot \
             unlock: decrypt it with `openssl pkey -in KEY -out NEWKEY` and keep NEWKEY \
             readable only by the user that starts the server",
        ));
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsConfigError::in_file(
            file,
            "no private key found (expected a PEM block '-----BEGIN PRIVATE KEY-----', \
             'EC PRIVATE KEY' or 'RSA PRIVATE KEY')",
        ),
        e => TlsConfigError::in_file(file, pem_error(&e)),
    })
}

/// A PEM syntax error in words: the parser's own text shows a label as a list of byte values
/// (`missing section end marker: [67, 69, 82, …]`).
fn pem_error(e: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim_end().to_string();
    match e {
        Error::MissingSectionEnd { end_marker } => {
            let label = text(end_marker);
            format!(
                "not valid PEM: the '-----BEGIN {label}-----' block has no \
                 '-----END {label}-----' line (is the file cut short?)"
            )
        }
        Error::IllegalSectionStart { line } => {
            format!("not valid PEM: a malformed BEGIN line {:?}", text(line))
        }
        Error::Base64Decode(_) => {
            "not valid PEM: a block's base64 text is damaged (a character that is not base64, \
             or a line cut short)"
                .to_string()
        }
        e => format!("not valid PEM ({e})"),
    }
}

/// Checks each certificate's expiry and that each is issued by the next; returns the earliest
/// `notAfter`.
fn check_chain(
    file: &Path,
    certs: &[CertificateDer<'_>],
    provider: &CryptoProvider,
    now: i64,
) -> Result<i64, TlsConfigError> {
    let parsed = certs
        .iter()
        .enumerate()
        .map(|(i, der)| {
            Cert::parse(der).map_err(|_| {
                TlsConfigError::in_file(file, format!("certificate {} is not valid X.509", i + 1))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let describe = |i: usize| format!("certificate {} ({})", i + 1, parsed[i].subject_dn());
    for (i, cert) in parsed.iter().enumerate() {
        if cert.not_after() < now {
            return Err(TlsConfigError::in_file(
                file,
                format!("{} expired at {}", describe(i), cert.not_after_text()),
            ));
        }
        if cert.not_before() > now {
            return Err(TlsConfigError::in_file(
                file,
                format!(
                    "{} is not valid before {} (every client would refuse it until then)",
                    describe(i),
                    cert.not_before_text()
                ),
            ));
        }
    }
    for (i, pair) in parsed.windows(2).enumerate() {
        let (cert, issuer) = (&pair[0], &pair[1]);
        if !cert.names_as_issuer(issuer) {
            return Err(TlsConfigError::in_file(
                file,
                format!(
                    "{} is not issued by the next one, {}: put the server certificate first, \
                     then each issuer in turn",
                    describe(i),
                    describe(i + 1)
                ),
            ));
        }
        // Verify the signature when the provider knows the algorithm pair (it knows the ones
        // TLS uses); otherwise the names above are the check.
        let algs = provider.signature_verification_algorithms.all;
        if cert.signed_by(issuer, algs) == Some(false) {
            return Err(TlsConfigError::in_file(
                file,
                format!(
                    "{}'s signature does not verify with the key of {}",
                    describe(i),
                    describe(i + 1)
                ),
            ));
        }
    }
    Ok(parsed.iter().map(Cert::not_after).min().unwrap_or(i64::MAX))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn testdata(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/io/tls/testdata")
            .join(name)
    }

    /// 2026-11-26: the fixtures, made on 2026-11-25 at 04:34 UTC, are valid from then on; the
    /// valid ones last until 2126, `expired.pem` ended on 2026-11-24.
    pub(crate) const NOW: i64 = 1_795_651_200;

    pub(crate) fn settings() -> TlsSettings {
        TlsSettings {
            cert_file: testdata("server-chain.pem"),
            key_file: testdata("server.key"),
            ca_file: None,
            client_auth: ClientAuth::None,
            min_version: MinVersion::Tls12,
            alpn: vec![b"http/1.1".to_vec()],
        }
    }

    fn error(settings: TlsSettings) -> String {
        load(&settings, NOW).unwrap_err().to_string()
    }

    #[test]
    fn loads_a_good_chain() {
        let config = load(&settings(), NOW).unwrap();
        assert_eq!(config.subject, "CN=localhost");
        // The leaf and the intermediate were made together: the leaf's notAfter (2126).
        assert_eq!(config.not_after, 4_949_181_288);
        assert_eq!(config.server.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[test]
    fn expired_certificate_names_file_and_date() {
        let e = error(TlsSettings {
            cert_file: testdata("expired.pem"),
            ..settings()
        });
        assert!(e.contains("expired.pem: certificate 1 (CN=localhost) expired at 2026-11-24"));
    }

    #[test]
    fn certificate_not_valid_yet_names_file_and_date() {
        // Two days before NOW, the day before the fixtures were made: not valid yet.
        let e = load(&settings(), NOW - 2 * 86_400).unwrap_err().to_string();
        assert!(
            e.contains(
                "server-chain.pem: certificate 1 (CN=localhost) is not valid before 2026-11-2"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_cut_pem_file_is_said_in_words() {
        let dir = std::env::temp_dir().join(format!("sluicegate-pem-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let whole = std::fs::read_to_string(testdata("server-chain.pem")).unwrap();
        let cut = dir.join("cut.pem");
        std::fs::write(&cut, &whole[..whole.len() / 3]).unwrap();
        let e = error(TlsSettings {
            cert_file: cut.clone(),
            ..settings()
        });
        assert!(
            e.ends_with(
                "cut.pem: not valid PEM: the '-----BEGIN CERTIFICATE-----' block has no \
                 '-----END CERTIFICATE-----' line (is the file cut short?)"
            ),
            "{e}"
        );
        let key = std::fs::read_to_string(testdata("server.key")).unwrap();
        let cut_key = dir.join("cut.key");
        std::fs::write(&cut_key, &key[..key.len() / 2]).unwrap();
        let e = error(TlsSettings {
            key_file: cut_key,
            ..settings()
        });
        assert!(e.contains("'-----END PRIVATE KEY-----' line"), "{e}");
        assert!(!e.contains('['), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn encrypted_key_is_refused_with_a_hint() {
        let e = error(TlsSettings {
            key_file: testdata("server-encrypted.key"),
            ..settings()
        });
        assert!(
            e.contains("server-encrypted.key: the private key is encrypted"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn key_of_another_certificate_is_refused() {
        let e = error(TlsSettings {
            key_file: testdata("other.key"),
            ..settings()
        });
        assert!(e.contains("other.key: this private key does not match the certificate in"));
    }

    #[test]
    fn chain_in_the_wrong_order_is_refused() {
        let e = error(TlsSettings {
            cert_file: testdata("server-chain-reversed.pem"),
            ..settings()
        });
        assert!(
            e.contains("server-chain-reversed.pem: certificate 1 (CN=sluicegate test intermediate) is not issued by the next one"),
            "{e}"
        );
    }

    #[test]
    fn unreadable_or_not_pem_files() {
        let e = error(TlsSettings {
            cert_file: testdata("missing.pem"),
            ..settings()
        });
        assert!(e.contains("missing.pem: cannot read"), "{e}");
        // A key file given as the certificate: no certificate in it.
        let e = error(TlsSettings {
            cert_file: testdata("server.key"),
            ..settings()
        });
        assert!(e.contains("server.key: no certificate found"), "{e}");
        let e = error(TlsSettings {
            key_file: testdata("server.pem"),
            ..settings()
        });
        assert!(e.contains("server.pem: no private key found"), "{e}");
    }

    #[test]
    fn client_certificates_need_a_ca_file() {
        let e = error(TlsSettings {
            client_auth: ClientAuth::Required,
            ..settings()
        });
        assert!(e.contains("need a CA file"), "{e}");
        let e = error(TlsSettings {
            client_auth: ClientAuth::Required,
            ca_file: Some(testdata("server.key")),
            ..settings()
        });
        assert!(e.contains("server.key: no certificate found"), "{e}");
    }

    #[test]
    fn option_values() {
        assert_eq!(ClientAuth::parse("optional"), Some(ClientAuth::Optional));
        assert_eq!(ClientAuth::parse("OPTIONAL"), None);
        assert_eq!(MinVersion::parse("1.3"), Some(MinVersion::Tls13));
        assert_eq!(MinVersion::parse("1.1"), None);
    }
}
