//! Unit tests of gunicorn's access log format: the default format's atoms, the specs
//! accepted and refused, basic-auth users decoded, and escaping as gunicorn does it.

use super::*;

#[test]
fn gunicorns_default_format_compiles_to_nine_atoms() {
    let f = GunicornFormat::parse(r#"%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s""#)
        .unwrap();
    let atoms = f
        .parts
        .iter()
        .filter(|p| matches!(p, Part::Atom(_)))
        .count();
    assert_eq!(atoms, 9);
    assert!(!f.names_extras());
}

#[test]
fn specs_and_refusals() {
    let f = GunicornFormat::parse("%(D)06d %({X-Id}i)s %({content-type}o)s 100%%").unwrap();
    assert!(f.names_extras());
    assert!(
        matches!(&f.parts[2], Part::Atom(Spec { atom: Atom::RequestHeader(n), .. }) if n == b"x-id")
    );
    assert!(GunicornFormat::parse("%(s)d")
        .unwrap_err()
        .contains("is text"));
    assert!(GunicornFormat::parse("%(h)x")
        .unwrap_err()
        .contains("conversions"));
    assert!(GunicornFormat::parse("%s")
        .unwrap_err()
        .contains("names no atom"));
    assert!(GunicornFormat::parse("%(h")
        .unwrap_err()
        .contains("unclosed"));
}

#[test]
fn basic_users_decode_as_gunicorn_does() {
    assert_eq!(
        basic_user(Some(b"Basic dXNlcjpwdw==")).as_deref(),
        Some("user")
    );
    assert_eq!(
        basic_user(Some(b"basic  dXNlcjpwdw== ")).as_deref(),
        Some("user")
    );
    assert_eq!(basic_user(Some(b"Bearer abc")), None);
    assert_eq!(basic_user(Some(b"Basic !!!")), None);
}

#[test]
fn quotes_and_control_bytes_are_escaped_high_latin1_is_utf8() {
    let s = Spec {
        atom: Atom::Unknown,
        left: false,
        zero: false,
        width: 0,
        precision: None,
        number: false,
    };
    let mut line = Vec::new();
    push_atom(&mut line, &s, text(b"a\"b\n\xe9"));
    assert_eq!(line, "a\\\"b\\x0aé".as_bytes());
}
