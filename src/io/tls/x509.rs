//! The few X.509 facts the server reads itself: issuer and subject (to check chain order and to
//! give the app `SSL_CLIENT_S_DN`/`SSL_CLIENT_I_DN`), validity (the validity window check, the
//! expiry metric), the
//! signed part and signature (to check that each certificate is signed by the next), and the
//! PEM text of a certificate (`SSL_CLIENT_CERT`).
//!
//! Parsing is the `x509-cert` crate's (strict DER; see Cargo.toml for why this crate): rustls
//! and webpki do the verification that matters but never expose these fields. What stays here
//! is Apache mod_ssl's way of printing a name, which is OpenSSL's and no crate's. Client
//! certificates reach this module only after webpki verified them, server files before binding.

use std::fmt::Write as _;

use rustls::pki_types::SignatureVerificationAlgorithm;
use x509_cert::der::asn1::AnyRef;
use x509_cert::der::pem::LineEnding;
use x509_cert::der::{DateTime, Decode, Encode, Reader, SliceReader, Tag, Tagged};
use x509_cert::name::Name;
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_cert::time::Time;
use x509_cert::Certificate;

/// A certificate that is not the DER this module expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadDer;

/// One parsed certificate, with the signed bytes borrowed from its DER.
#[derive(Debug)]
pub struct Cert<'a> {
    /// The whole `tbsCertificate` TLV as received: the bytes the issuer signed (never
    /// re-encoded, so that a signature over unusual but valid DER still verifies).
    tbs: &'a [u8],
    cert: Certificate,
}

impl<'a> Cert<'a> {
    pub fn parse(der: &'a [u8]) -> Result<Cert<'a>, BadDer> {
        let cert = Certificate::from_der(der).map_err(|_| BadDer)?;
        let contents = AnyRef::from_der(der).map_err(|_| BadDer)?.value();
        let tbs = SliceReader::new(contents)
            .and_then(|mut r| r.tlv_bytes())
            .map_err(|_| BadDer)?;
        Ok(Cert { tbs, cert })
    }

    /// The subject as mod_ssl prints it (`SSL_CLIENT_S_DN`).
    pub fn subject_dn(&self) -> String {
        dn_string(self.cert.tbs_certificate().subject())
    }

    /// The issuer as mod_ssl prints it (`SSL_CLIENT_I_DN`).
    pub fn issuer_dn(&self) -> String {
        dn_string(self.cert.tbs_certificate().issuer())
    }

    /// `notAfter`, unix seconds.
    pub fn not_after(&self) -> i64 {
        let secs = self.not_after_time().to_unix_duration().as_secs();
        i64::try_from(secs).unwrap_or(i64::MAX)
    }

    /// `notAfter` as `2026-11-24 04:30:16 UTC`, for error messages.
    pub fn not_after_text(&self) -> String {
        format_utc(&self.not_after_time().to_date_time())
    }

    fn not_after_time(&self) -> Time {
        self.cert.tbs_certificate().validity().not_after
    }

    /// `notBefore`, unix seconds.
    pub fn not_before(&self) -> i64 {
        let secs = self.not_before_time().to_unix_duration().as_secs();
        i64::try_from(secs).unwrap_or(i64::MAX)
    }

    /// `notBefore` as `2026-11-24 04:30:16 UTC`, for error messages.
    pub fn not_before_text(&self) -> String {
        format_utc(&self.not_before_time().to_date_time())
    }

    fn not_before_time(&self) -> Time {
        self.cert.tbs_certificate().validity().not_before
    }

    /// Whether this certificate names `issuer`'s subject as its issuer (chain order).
    pub fn names_as_issuer(&self, issuer: &Cert<'_>) -> bool {
        self.cert.tbs_certificate().issuer() == issuer.cert.tbs_certificate().subject()
    }

    /// Whether `issuer`'s key verifies this certificate's signature, with the first of `algs`
    /// that fits both algorithm identifiers; `None` when none fits (the provider lacks it).
    pub fn signed_by(
        &self,
        issuer: &Cert<'_>,
        algs: &[&dyn SignatureVerificationAlgorithm],
    ) -> Option<bool> {
        let sig_alg = alg_id_contents(self.cert.signature_algorithm())?;
        let spki = issuer.cert.tbs_certificate().subject_public_key_info();
        let key_alg = alg_id_contents(&spki.algorithm)?;
        let alg = algs.iter().find(|a| {
            a.signature_alg_id().as_ref() == sig_alg.as_slice()
                && a.public_key_alg_id().as_ref() == key_alg.as_slice()
        })?;
        let key = spki.subject_public_key.raw_bytes();
        let signature = self.cert.signature().raw_bytes();
        Some(alg.verify_signature(key, self.tbs, signature).is_ok())
    }
}

/// The contents of an `AlgorithmIdentifier` (without its SEQUENCE header), as webpki and the
/// rustls providers name algorithms.
fn alg_id_contents(alg: &AlgorithmIdentifierOwned) -> Option<Vec<u8>> {
    let der = alg.to_der().ok()?;
    Some(AnyRef::from_der(&der).ok()?.value().to_vec())
}

/// A certificate's DER as PEM text (`SSL_CLIENT_CERT`, of the bytes as received): base64 in
/// 64-column lines.
pub fn pem(der: &[u8]) -> String {
    x509_cert::der::pem::encode_string("CERTIFICATE", LineEnding::LF, der).unwrap_or_default()
}

/// A date as `2026-11-24 04:30:16 UTC`.
fn format_utc(t: &DateTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minutes(),
        t.seconds()
    )
}

/// A `Name` as OpenSSL's `X509_NAME_print_ex` prints it with
/// `XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB`, which is how Apache's mod_ssl fills
/// `SSL_CLIENT_S_DN`: last RDN first, `,` between RDNs, `+` inside one, OpenSSL's short
/// attribute names, RFC 2253 escapes, UTF-8 kept as is, unknown attributes as `OID=#hex`.
pub fn dn_string(name: &Name) -> String {
    let mut parts: Vec<String> = Vec::new();
    for rdn in name.iter_rdn() {
        let mut text = String::new();
        for ava in rdn.iter() {
            if !text.is_empty() {
                text.push('+');
            }
            let short = attribute_name(ava.oid.as_bytes());
            match short {
                Some(short) => text.push_str(short),
                None => text.push_str(&ava.oid.to_string()),
            }
            text.push('=');
            match (short, decode_string(ava.value.tag(), ava.value.value())) {
                (Some(_), Some(value)) => escape_rfc2253(&value, &mut text),
                _ => {
                    text.push('#');
                    for b in ava.value.to_der().unwrap_or_default() {
                        let _ = write!(text, "{b:02x}");
                    }
                }
            }
        }
        parts.push(text);
    }
    parts.reverse();
    parts.join(",")
}

/// OpenSSL's short names for the attributes seen in certificate names.
fn attribute_name(oid: &[u8]) -> Option<&'static str> {
    // id-at, 2.5.4.n
    if let [0x55, 0x04, n] = oid {
        return Some(match n {
            3 => "CN",
            4 => "SN",
            5 => "serialNumber",
            6 => "C",
            7 => "L",
            8 => "ST",
            9 => "street",
            10 => "O",
            11 => "OU",
            12 => "title",
            13 => "description",
            15 => "businessCategory",
            17 => "postalCode",
            41 => "name",
            42 => "GN",
            43 => "initials",
            44 => "generationQualifier",
            46 => "dnQualifier",
            65 => "pseudonym",
            97 => "organizationIdentifier",
            _ => return None,
        });
    }
    match oid {
        // 1.2.840.113549.1.9.1
        [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01] => Some("emailAddress"),
        // 0.9.2342.19200300.100.1.25 and .1
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19] => Some("DC"),
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01] => Some("UID"),
        _ => None,
    }
}

/// The text of the string types a `Name` uses; `None` for anything else.
fn decode_string(tag: Tag, v: &[u8]) -> Option<String> {
    match tag {
        Tag::Utf8String
        | Tag::NumericString
        | Tag::PrintableString
        | Tag::Ia5String
        | Tag::VisibleString => String::from_utf8(v.to_vec()).ok(),
        // TeletexString: OpenSSL reads it as Latin-1.
        Tag::TeletexString => Some(v.iter().map(|&b| char::from(b)).collect()),
        // BMPString: UTF-16BE.
        Tag::BmpString if v.len().is_multiple_of(2) => {
            let units = v.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]));
            char::decode_utf16(units)
                .collect::<Result<String, _>>()
                .ok()
        }
        _ => None,
    }
}

/// RFC 2253 section 2.4, as OpenSSL does it: `\` before `,+"\<>;`, before a leading `#` or
/// space and a trailing space; control characters as `\XX`.
fn escape_rfc2253(text: &str, out: &mut String) {
    let last = text.chars().count().saturating_sub(1);
    for (i, c) in text.chars().enumerate() {
        match c {
            ',' | '+' | '"' | '\\' | '<' | '>' | ';' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    fn testdata(name: &str) -> Vec<CertificateDer<'static>> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/io/tls/testdata/");
        CertificateDer::pem_file_iter(format!("{path}{name}"))
            .unwrap()
            .map(|c| c.unwrap())
            .collect()
    }

    #[test]
    fn reads_the_fields_openssl_reads() {
        let chain = testdata("server-chain.pem");
        let leaf = Cert::parse(&chain[0]).unwrap();
        let inter = Cert::parse(&chain[1]).unwrap();
        assert_eq!(leaf.subject_dn(), "CN=localhost");
        assert_eq!(leaf.issuer_dn(), "CN=sluicegate test intermediate");
        assert!(leaf.names_as_issuer(&inter));
        assert!(!inter.names_as_issuer(&leaf));
        // `openssl x509 -enddate` on the fixture: Nov  1 04:34:48 2126 GMT (GeneralizedTime).
        assert_eq!(leaf.not_after(), 4_949_181_288);
        assert_eq!(leaf.not_after_text(), "2126-11-01 04:34:48 UTC");
        let expired_der = testdata("expired.pem");
        let expired = Cert::parse(&expired_der[0]).unwrap();
        assert_eq!(expired.not_after_text(), "2026-11-24 04:34:48 UTC");
    }

    #[test]
    fn signature_checks_with_the_issuers_key() {
        let chain = testdata("server-chain.pem");
        let leaf = Cert::parse(&chain[0]).unwrap();
        let inter = Cert::parse(&chain[1]).unwrap();
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let algs = provider.signature_verification_algorithms.all;
        assert_eq!(leaf.signed_by(&inter, algs), Some(true));
        // The leaf's key did not sign the intermediate (or the algorithm pair is unknown).
        assert_ne!(inter.signed_by(&leaf, algs), Some(true));
        assert_eq!(leaf.signed_by(&inter, &[]), None);
    }

    #[test]
    fn client_dn_as_mod_ssl_prints_it() {
        let client = &testdata("client.pem")[0];
        let cert = Cert::parse(client).unwrap();
        // `openssl x509 -subject -nameopt RFC2253`
        assert_eq!(
            cert.subject_dn(),
            "CN=sluicegate-test-client,O=sluicegate tests"
        );
        assert_eq!(cert.issuer_dn(), "CN=sluicegate test CA");
    }

    #[test]
    fn pem_round_trips() {
        let client = &testdata("client.pem")[0];
        let text = pem(client);
        let back = CertificateDer::from_pem_slice(text.as_bytes()).unwrap();
        assert_eq!(back.as_ref(), client.as_ref());
        let on_disk = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/io/tls/testdata/client.pem"
        ))
        .unwrap();
        assert_eq!(text, on_disk);
    }

    #[test]
    fn escapes_as_rfc2253() {
        let mut s = String::new();
        escape_rfc2253("#a,b+c \"q\"\\ ", &mut s);
        assert_eq!(s, "\\#a\\,b\\+c \\\"q\\\"\\\\\\ ");
    }

    #[test]
    fn unknown_attributes_and_string_types_print_as_openssl_does() {
        // Names built by the crate's RFC 4514 parser (which takes them as printed: last RDN
        // first) print back the same: an unknown attribute type as its OID and the value's
        // DER in hex (UTF8String "a": 0c 01 61), two values in one RDN joined by `+`, a comma
        // in a value escaped.
        let name: Name = "CN=x".parse().unwrap();
        assert_eq!(dn_string(&name), "CN=x");
        let name: Name = "1.2.3.4=a,OU=x+O=a\\,b".parse().unwrap();
        assert_eq!(dn_string(&name), "1.2.3.4=#0c0161,OU=x+O=a\\,b");
        assert_eq!(
            decode_string(Tag::BmpString, &[0x01, 0x00]).as_deref(),
            Some("\u{100}")
        );
        assert_eq!(
            decode_string(Tag::TeletexString, &[0xe9]).as_deref(),
            Some("é")
        );
    }

    #[test]
    fn any_truncation_or_corruption_is_an_error_not_a_panic() {
        let der = testdata("client.pem").remove(0);
        for cut in 0..der.len() {
            assert!(Cert::parse(&der[..cut]).is_err());
        }
        // Flip each byte: parses or errors, and the name printer never panics.
        let mut bytes = der.to_vec();
        for i in 0..bytes.len() {
            bytes[i] ^= 0xff;
            if let Ok(c) = Cert::parse(&bytes) {
                let _ = c.subject_dn();
                let _ = c.issuer_dn();
                let _ = c.not_after_text();
            }
            bytes[i] ^= 0xff;
        }
    }
}
