//! The few X.509 facts the server reads itself: issuer and subject (to check chain order and to
//! give the app `SSL_CLIENT_S_DN`/`SSL_CLIENT_I_DN`), validity (expiry check, the metric), the
//! signed part and signature (to check that each certificate is signed by the next), and the
//! PEM text of a certificate (`SSL_CLIENT_CERT`).
//!
//! A small DER reader instead of a crate: rustls and webpki do the verification that matters
//! (they never expose these fields), and an X.509 crate would bring a dozen dependencies for
//! five fields. The reader is bounds-checked everywhere and returns [`BadDer`], never panics:
//! client certificates reach it only after webpki verified them, server files before binding.

use std::fmt::Write as _;

/// A certificate that is not the DER this module expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadDer;

const TAG_INTEGER: u8 = 0x02;
const TAG_BIT_STRING: u8 = 0x03;
const TAG_OID: u8 = 0x06;
const TAG_UTC_TIME: u8 = 0x17;
const TAG_GENERALIZED_TIME: u8 = 0x18;
const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_VERSION: u8 = 0xa0;

/// Reads DER TLVs one after another from a slice.
struct Der<'a> {
    rest: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Der<'a> {
        Der { rest: bytes }
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    /// The next TLV: (tag, contents, the whole TLV).
    fn any(&mut self) -> Result<(u8, &'a [u8], &'a [u8]), BadDer> {
        let (&tag, after_tag) = self.rest.split_first().ok_or(BadDer)?;
        let (&first, mut after_len) = after_tag.split_first().ok_or(BadDer)?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            // Long form, 1 to 4 length bytes; 0x80 (indefinite) is not DER.
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || after_len.len() < n {
                return Err(BadDer);
            }
            let len = after_len[..n]
                .iter()
                .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
            after_len = &after_len[n..];
            len
        };
        if after_len.len() < len {
            return Err(BadDer);
        }
        let header = self.rest.len() - after_len.len();
        let whole = &self.rest[..header + len];
        let contents = &after_len[..len];
        self.rest = &after_len[len..];
        Ok((tag, contents, whole))
    }

    /// The contents of the next TLV, which must have tag `tag`.
    fn expect(&mut self, tag: u8) -> Result<&'a [u8], BadDer> {
        match self.any()? {
            (t, contents, _) if t == tag => Ok(contents),
            _ => Err(BadDer),
        }
    }
}

/// The fields of one certificate, borrowed from its DER.
#[derive(Debug)]
pub struct Cert<'a> {
    /// The whole `tbsCertificate` TLV: the bytes the issuer signed.
    pub tbs: &'a [u8],
    /// The contents of the signature's `AlgorithmIdentifier` (as webpki's algorithm ids).
    pub signature_alg: &'a [u8],
    /// The signature bits.
    pub signature: &'a [u8],
    /// The whole issuer `Name` TLV (compared byte for byte with the next one's subject).
    pub issuer: &'a [u8],
    /// The whole subject `Name` TLV.
    pub subject: &'a [u8],
    /// Validity, unix seconds.
    pub not_before: i64,
    pub not_after: i64,
    /// The contents of the public key's `AlgorithmIdentifier`.
    pub public_key_alg: &'a [u8],
    /// The public key bits.
    pub public_key: &'a [u8],
}

impl<'a> Cert<'a> {
    pub fn parse(der: &'a [u8]) -> Result<Cert<'a>, BadDer> {
        let mut outer = Der::new(der);
        let mut cert = Der::new(outer.expect(TAG_SEQUENCE)?);
        if !outer.is_empty() {
            return Err(BadDer);
        }
        let (tag, tbs_contents, tbs) = cert.any()?;
        if tag != TAG_SEQUENCE {
            return Err(BadDer);
        }
        let signature_alg = cert.expect(TAG_SEQUENCE)?;
        let signature = bit_string(cert.expect(TAG_BIT_STRING)?)?;

        let mut t = Der::new(tbs_contents);
        if t.peek_tag() == Some(TAG_VERSION) {
            t.any()?;
        }
        t.expect(TAG_INTEGER)?; // serial number
        t.expect(TAG_SEQUENCE)?; // signature algorithm, again
        let issuer = name(&mut t)?;
        let mut validity = Der::new(t.expect(TAG_SEQUENCE)?);
        let not_before = time(&mut validity)?;
        let not_after = time(&mut validity)?;
        let subject = name(&mut t)?;
        let mut spki = Der::new(t.expect(TAG_SEQUENCE)?);
        let public_key_alg = spki.expect(TAG_SEQUENCE)?;
        let public_key = bit_string(spki.expect(TAG_BIT_STRING)?)?;
        Ok(Cert {
            tbs,
            signature_alg,
            signature,
            issuer,
            subject,
            not_before,
            not_after,
            public_key_alg,
            public_key,
        })
    }
}

fn name<'a>(der: &mut Der<'a>) -> Result<&'a [u8], BadDer> {
    match der.any()? {
        (TAG_SEQUENCE, _, whole) => Ok(whole),
        _ => Err(BadDer),
    }
}

/// A BIT STRING's bits, which must be whole bytes (keys and signatures are).
fn bit_string(contents: &[u8]) -> Result<&[u8], BadDer> {
    match contents.split_first() {
        Some((0, bits)) => Ok(bits),
        _ => Err(BadDer),
    }
}

/// `UTCTime` (YYMMDDHHMMSSZ, years 1950-2049) or `GeneralizedTime` (YYYYMMDDHHMMSSZ), as
/// RFC 5280 4.1.2.5 allows them, in unix seconds.
fn time(der: &mut Der<'_>) -> Result<i64, BadDer> {
    let (tag, s, _) = der.any()?;
    let (year, rest) = match (tag, s.len()) {
        (TAG_UTC_TIME, 13) => {
            let yy = digits(&s[..2])?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &s[2..])
        }
        (TAG_GENERALIZED_TIME, 15) => (digits(&s[..4])?, &s[4..]),
        _ => return Err(BadDer),
    };
    if rest[10] != b'Z' {
        return Err(BadDer);
    }
    let (month, day) = (digits(&rest[0..2])?, digits(&rest[2..4])?);
    let (h, m, sec) = (
        digits(&rest[4..6])?,
        digits(&rest[6..8])?,
        digits(&rest[8..10])?,
    );
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return Err(BadDer);
    }
    Ok(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec)
}

fn digits(s: &[u8]) -> Result<i64, BadDer> {
    s.iter().try_fold(0i64, |acc, &c| {
        if c.is_ascii_digit() {
            Ok(acc * 10 + i64::from(c - b'0'))
        } else {
            Err(BadDer)
        }
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix seconds as `2026-11-24 04:30:16 UTC`, for error messages.
pub fn format_utc(t: i64) -> String {
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    // civil_from_days (Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A `Name` (the whole TLV) as OpenSSL's `X509_NAME_print_ex` prints it with
/// `XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB`, which is how Apache's mod_ssl fills
/// `SSL_CLIENT_S_DN`: last RDN first, `,` between RDNs, `+` inside one, OpenSSL's short
/// attribute names, RFC 2253 escapes, UTF-8 kept as is, unknown attributes as `OID=#hex`.
pub fn dn_string(name_tlv: &[u8]) -> Result<String, BadDer> {
    let mut outer = Der::new(name_tlv);
    let mut rdns = Der::new(outer.expect(TAG_SEQUENCE)?);
    let mut parts: Vec<String> = Vec::new();
    while !rdns.is_empty() {
        let mut avas = Der::new(rdns.expect(TAG_SET)?);
        let mut rdn = String::new();
        while !avas.is_empty() {
            let mut ava = Der::new(avas.expect(TAG_SEQUENCE)?);
            let oid = ava.expect(TAG_OID)?;
            let (tag, value, value_tlv) = ava.any()?;
            if !rdn.is_empty() {
                rdn.push('+');
            }
            match attribute_name(oid) {
                Some(short) => rdn.push_str(short),
                None => rdn.push_str(&dotted_oid(oid)?),
            }
            rdn.push('=');
            match (attribute_name(oid), decode_string(tag, value)) {
                (Some(_), Some(text)) => escape_rfc2253(&text, &mut rdn),
                _ => {
                    rdn.push('#');
                    for b in value_tlv {
                        let _ = write!(rdn, "{b:02x}");
                    }
                }
            }
        }
        parts.push(rdn);
    }
    parts.reverse();
    Ok(parts.join(","))
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

fn dotted_oid(oid: &[u8]) -> Result<String, BadDer> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut acc: u64 = 0;
    for &b in oid {
        if acc > (u64::MAX >> 7) {
            return Err(BadDer);
        }
        acc = (acc << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            arcs.push(acc);
            acc = 0;
        }
    }
    let (&first, rest) = arcs.split_first().ok_or(BadDer)?;
    let (a, b) = match first {
        0..=39 => (0, first),
        40..=79 => (1, first - 40),
        _ => (2, first - 80),
    };
    let mut s = format!("{a}.{b}");
    for arc in rest {
        let _ = write!(s, ".{arc}");
    }
    Ok(s)
}

/// The text of the string types a `Name` uses; `None` for anything else.
fn decode_string(tag: u8, v: &[u8]) -> Option<String> {
    match tag {
        // UTF8String, NumericString, PrintableString, IA5String, VisibleString
        0x0c | 0x12 | 0x13 | 0x16 | 0x1a => String::from_utf8(v.to_vec()).ok(),
        // TeletexString: OpenSSL reads it as Latin-1.
        0x14 => Some(v.iter().map(|&b| char::from(b)).collect()),
        // BMPString: UTF-16BE.
        0x1e if v.len().is_multiple_of(2) => {
            let units = v.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]));
            char::decode_utf16(units)
                .collect::<Result<String, _>>()
                .ok()
        }
        // UniversalString: UTF-32BE.
        0x1c if v.len().is_multiple_of(4) => v
            .chunks_exact(4)
            .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
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

/// A certificate as PEM text (`SSL_CLIENT_CERT`): base64 in 64-column lines.
pub fn pem(der: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::with_capacity(der.len() * 4 / 3 + 4);
    for chunk in der.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = String::with_capacity(b64.len() + b64.len() / 64 + 64);
    out.push_str("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        // The alphabet is ASCII: every chunk is valid UTF-8.
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
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
        assert_eq!(dn_string(leaf.subject).unwrap(), "CN=localhost");
        assert_eq!(
            dn_string(leaf.issuer).unwrap(),
            "CN=sluicegate test intermediate"
        );
        assert_eq!(leaf.issuer, inter.subject);
        // `openssl x509 -enddate` on the fixture: Nov  1 04:34:48 2126 GMT (GeneralizedTime).
        assert_eq!(leaf.not_after, 4_949_181_288);
        assert_eq!(format_utc(leaf.not_after), "2126-11-01 04:34:48 UTC");
        let expired_der = testdata("expired.pem");
        let expired = Cert::parse(&expired_der[0]).unwrap();
        assert_eq!(format_utc(expired.not_after), "2026-11-24 04:34:48 UTC");
    }

    #[test]
    fn client_dn_as_mod_ssl_prints_it() {
        let client = &testdata("client.pem")[0];
        let cert = Cert::parse(client).unwrap();
        // `openssl x509 -subject -nameopt RFC2253`
        assert_eq!(
            dn_string(cert.subject).unwrap(),
            "CN=sluicegate-test-client,O=sluicegate tests"
        );
        assert_eq!(dn_string(cert.issuer).unwrap(), "CN=sluicegate test CA");
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
        assert_eq!(dotted_oid(&[0x2a, 0x86, 0x48]).unwrap(), "1.2.840");
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
                let _ = dn_string(c.subject);
                let _ = dn_string(c.issuer);
            }
            bytes[i] ^= 0xff;
        }
    }
}
