//! Unit tests of the configuration's enums against python/sluicegate/allowed_values.txt: one
//! variant per allowed value, each value naming its variant.

use super::*;

/// Every option of `allowed_values.txt` read here, with its variants' count: one variant
/// per name, no name twice, each name parsing to the variant in its place.
fn agrees<T: Copy + PartialEq + std::fmt::Debug>(option: &str, variants: &[T]) {
    let names = allowed_values(option);
    assert_eq!(
        names.len(),
        variants.len(),
        "{option}: {names:?} against {variants:?}"
    );
    for (place, name) in names.iter().enumerate() {
        assert_eq!(
            names.iter().filter(|n| *n == name).count(),
            1,
            "{option}: {name} twice"
        );
        assert_eq!(by_name(option, variants, name), Some(variants[place]));
    }
    assert_eq!(by_name(option, variants, "no-such-name"), None);
}

#[test]
fn each_enum_has_one_variant_per_allowed_value() {
    agrees("scheduler", &Policy::ALL);
    agrees("spin", &SpinPolicy::ALL);
    agrees("pace", &PacePolicy::ALL);
    agrees("start_gate", &GatePolicy::ALL);
    agrees("http2", &Http2Mode::ALL);
    agrees("cert_reqs", &ClientAuth::ALL);
    agrees("tls_min_version", &MinVersion::ALL);
    agrees("forwarded_headers", &FAMILIES);
}

/// What each name means: a name renamed or moved in `allowed_values.txt` fails here until
/// its variant follows.
#[test]
fn each_allowed_value_names_its_variant() {
    assert_eq!(Policy::parse("adaptive"), Some(Policy::Adaptive));
    assert_eq!(Policy::parse("inline"), Some(Policy::Inline));
    assert_eq!(Policy::parse("pool"), Some(Policy::Pool));
    assert_eq!(Http2Mode::parse("on"), Some(Http2Mode::On));
    assert_eq!(Http2Mode::parse("tls"), Some(Http2Mode::Tls));
    assert_eq!(Http2Mode::parse("off"), Some(Http2Mode::Off));
    assert_eq!(ClientAuth::parse("none"), Some(ClientAuth::None));
    assert_eq!(ClientAuth::parse("optional"), Some(ClientAuth::Optional));
    assert_eq!(ClientAuth::parse("required"), Some(ClientAuth::Required));
    assert_eq!(MinVersion::parse("1.2"), Some(MinVersion::Tls12));
    assert_eq!(MinVersion::parse("1.3"), Some(MinVersion::Tls13));
    assert_eq!(
        by_name("forwarded_headers", &FAMILIES, "x-forwarded"),
        Some(Family::XForwarded)
    );
    assert_eq!(
        by_name("forwarded_headers", &FAMILIES, "forwarded"),
        Some(Family::Forwarded)
    );
}

#[test]
fn an_option_not_in_the_file_has_no_values() {
    assert!(allowed_values("threads").is_empty());
    assert_eq!(
        Policy::parse("Pool"),
        None,
        "names are exact: the front lowercases them"
    );
}
