//! HTTP dates (IMF-fixdate, RFC 9110 §5.6.7), formatted without allocation. The I/O layer caches
//! the formatted value per second; this module is pure. Parsing also accepts the two obsolete
//! forms (RFC 850 and asctime) because RFC 9110 requires recipients to, for conditional requests.
//!
//! Calendar arithmetic is Howard Hinnant's `days_from_civil` / `civil_from_days` (proleptic
//! Gregorian, exact for every year we can print), so no date crate is needed.

/// Length of an IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
pub const HTTP_DATE_LEN: usize = 29;

/// Last second an IMF-fixdate can show (9999-12-31 23:59:59): its year has four digits.
const MAX_FORMATTABLE_SECS: u64 = 253_402_300_799;

const DAY_NAMES: [&[u8; 3]; 7] = [b"Sun", b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat"];
const DAY_NAMES_LONG: [&[u8]; 7] = [
    b"Sunday",
    b"Monday",
    b"Tuesday",
    b"Wednesday",
    b"Thursday",
    b"Friday",
    b"Saturday",
];
const MONTH_NAMES: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Format seconds since the Unix epoch as an IMF-fixdate. Times after the year 9999 (which an
/// IMF-fixdate cannot show) are clamped to 9999-12-31 23:59:59.
pub fn format_http_date(unix_secs: u64) -> [u8; HTTP_DATE_LEN] {
    let secs = unix_secs.min(MAX_FORMATTABLE_SECS);
    let days = secs / 86_400;
    let sod = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday (index 4).
    let weekday = ((days + 4) % 7) as usize;

    let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    out[0..3].copy_from_slice(DAY_NAMES[weekday]);
    two_digits(&mut out[5..7], day);
    out[8..11].copy_from_slice(MONTH_NAMES[(month - 1) as usize]);
    two_digits(&mut out[12..14], year / 100);
    two_digits(&mut out[14..16], year % 100);
    two_digits(&mut out[17..19], (sod / 3600) as u32);
    two_digits(&mut out[20..22], (sod / 60 % 60) as u32);
    two_digits(&mut out[23..25], (sod % 60) as u32);
    out
}

/// Length of an ISO 8601 UTC time with milliseconds, `1994-11-06T08:49:37.000Z`.
pub const ISO_TIME_LEN: usize = 24;

/// Format a time since the Unix epoch (seconds, and milliseconds within the second) as ISO 8601
/// in UTC with milliseconds: what log pipelines parse without a format string. Clamped as
/// [`format_http_date`].
pub fn format_iso_time(unix_secs: u64, millis: u32) -> [u8; ISO_TIME_LEN] {
    let secs = unix_secs.min(MAX_FORMATTABLE_SECS);
    let (year, month, day) = civil_from_days(secs / 86_400);
    let sod = secs % 86_400;
    let mut out = *b"1970-01-01T00:00:00.000Z";
    two_digits(&mut out[0..2], year / 100);
    two_digits(&mut out[2..4], year % 100);
    two_digits(&mut out[5..7], month);
    two_digits(&mut out[8..10], day);
    two_digits(&mut out[11..13], (sod / 3600) as u32);
    two_digits(&mut out[14..16], (sod / 60 % 60) as u32);
    two_digits(&mut out[17..19], (sod % 60) as u32);
    let ms = millis.min(999);
    out[20] = b'0' + (ms / 100) as u8;
    two_digits(&mut out[21..23], ms % 100);
    out
}

#[inline]
fn two_digits(dst: &mut [u8], n: u32) {
    dst[0] = b'0' + (n / 10) as u8;
    dst[1] = b'0' + (n % 10) as u8;
}

/// (year, month 1-12, day 1-31) of a day count since 1970-01-01.
fn civil_from_days(days: u64) -> (u32, u32, u32) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400) as u32 + u32::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a valid date with year >= 1970.
fn days_from_civil(year: u32, month: u32, day: u32) -> u64 {
    let y = u64::from(year) - u64::from(month <= 2);
    let era = y / 400;
    let yoe = y - era * 400;
    let m = u64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + u64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        _ => 31,
    }
}

/// Parse an IMF-fixdate (and the two obsolete forms RFC 9110 requires recipients to accept)
/// into seconds since the Unix epoch; `None` if invalid. (For conditional requests.)
///
/// Names are case-sensitive as the grammar says; the weekday name must be a real one but is
/// not checked against the date. RFC 850's two-digit years 70-99 are 19xx and 00-69 are 20xx
/// (this module does not know "now", which RFC 9110's 50-year rule would need). Dates before
/// 1970 cannot be represented and give `None`. Second 60 (a leap second) is accepted.
pub fn parse_http_date(s: &[u8]) -> Option<u64> {
    if s.len() == HTTP_DATE_LEN && s[3] == b',' {
        parse_imf_fixdate(s)
    } else if s.len() == 24 && s[3] == b' ' {
        parse_asctime(s)
    } else {
        parse_rfc850(s)
    }
}

/// "Sun, 06 Nov 1994 08:49:37 GMT"
fn parse_imf_fixdate(s: &[u8]) -> Option<u64> {
    day_name(&s[0..3])?;
    expect(&s[3..5], b", ")?;
    let day = digits(&s[5..7])?;
    expect(&s[7..8], b" ")?;
    let month = month(&s[8..11])?;
    expect(&s[11..12], b" ")?;
    let year = digits(&s[12..16])?;
    expect(&s[16..17], b" ")?;
    let secs = time_of_day(&s[17..25])?;
    expect(&s[25..29], b" GMT")?;
    to_unix(year, month, day, secs)
}

/// "Sunday, 06-Nov-94 08:49:37 GMT"
fn parse_rfc850(s: &[u8]) -> Option<u64> {
    let comma = s.iter().position(|&b| b == b',')?;
    if !DAY_NAMES_LONG.contains(&&s[..comma]) {
        return None;
    }
    let rest = &s[comma..];
    if rest.len() != 24 {
        return None;
    }
    expect(&rest[0..2], b", ")?;
    let day = digits(&rest[2..4])?;
    expect(&rest[4..5], b"-")?;
    let month = month(&rest[5..8])?;
    expect(&rest[8..9], b"-")?;
    let yy = digits(&rest[9..11])?;
    let year = if yy >= 70 { 1900 + yy } else { 2000 + yy };
    expect(&rest[11..12], b" ")?;
    let secs = time_of_day(&rest[12..20])?;
    expect(&rest[20..24], b" GMT")?;
    to_unix(year, month, day, secs)
}

/// "Sun Nov  6 08:49:37 1994"
fn parse_asctime(s: &[u8]) -> Option<u64> {
    day_name(&s[0..3])?;
    expect(&s[3..4], b" ")?;
    let month = month(&s[4..7])?;
    expect(&s[7..8], b" ")?;
    let day = if s[8] == b' ' {
        digits(&s[9..10])?
    } else {
        digits(&s[8..10])?
    };
    expect(&s[10..11], b" ")?;
    let secs = time_of_day(&s[11..19])?;
    expect(&s[19..20], b" ")?;
    let year = digits(&s[20..24])?;
    to_unix(year, month, day, secs)
}

fn expect(got: &[u8], want: &[u8]) -> Option<()> {
    (got == want).then_some(())
}

fn day_name(s: &[u8]) -> Option<()> {
    DAY_NAMES.iter().any(|d| &d[..] == s).then_some(())
}

fn month(s: &[u8]) -> Option<u32> {
    MONTH_NAMES
        .iter()
        .position(|m| &m[..] == s)
        .map(|i| i as u32 + 1)
}

/// All ASCII digits (and at least one) as a number; callers pass at most 4.
fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &b| n * 10 + u32::from(b - b'0')))
}

/// "08:49:37" as seconds of the day.
fn time_of_day(s: &[u8]) -> Option<u64> {
    expect(&s[2..3], b":")?;
    expect(&s[5..6], b":")?;
    let (h, m, sec) = (digits(&s[0..2])?, digits(&s[3..5])?, digits(&s[6..8])?);
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(u64::from(h * 3600 + m * 60 + sec))
}

fn to_unix(year: u32, month: u32, day: u32, secs_of_day: u64) -> Option<u64> {
    if year < 1970 || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + secs_of_day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(secs: u64) -> String {
        String::from_utf8(format_http_date(secs).to_vec()).unwrap()
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(fmt(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(fmt(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(fmt(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(fmt(1_709_164_799), "Wed, 28 Feb 2024 23:59:59 GMT");
        assert_eq!(fmt(1_709_251_199), "Thu, 29 Feb 2024 23:59:59 GMT");
        assert_eq!(fmt(4_102_444_800), "Fri, 01 Jan 2100 00:00:00 GMT");
        assert_eq!(fmt(MAX_FORMATTABLE_SECS), "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(fmt(u64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT", "clamped");
    }

    #[test]
    fn formats_iso_times() {
        let iso = |s, ms| String::from_utf8(format_iso_time(s, ms).to_vec()).unwrap();
        assert_eq!(iso(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(784_111_777, 42), "1994-11-06T08:49:37.042Z");
        assert_eq!(iso(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
        assert_eq!(iso(u64::MAX, 5000), "9999-12-31T23:59:59.999Z", "clamped");
    }

    #[test]
    fn parses_all_three_forms() {
        assert_eq!(
            parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_http_date(b"Sun Nov  6 08:49:37 1994"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_http_date(b"Sun Nov 16 08:49:37 1994"),
            Some(784_111_777 + 864_000)
        );
        assert_eq!(
            parse_http_date(b"Thursday, 01-Jan-70 00:00:00 GMT"),
            Some(0)
        );
        assert_eq!(
            parse_http_date(b"Saturday, 01-Jan-00 00:00:00 GMT"),
            Some(946_684_800)
        );
        assert_eq!(
            parse_http_date(b"Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(951_782_400)
        );
        assert_eq!(
            parse_http_date(b"Thu, 01 Jan 1970 00:00:60 GMT"),
            Some(60),
            "leap second"
        );
    }

    #[test]
    fn rejects_invalid_dates() {
        for s in [
            "",
            "garbage",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT ",
            "Sun,  6 Nov 1994 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Thu, 29 Feb 2001 00:00:00 GMT",
            "Thu, 29 Feb 1900 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 1994 08-49-37 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, 06 Nov +994 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun Nov 06 08:49:37 1994 ",
            "Sun Nov  6 08:49:37 94",
            "Sun Nov x6 08:49:37 1994",
            "Sun, 06-Nov-94 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Funday, 06-Nov-94 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT ",
        ] {
            assert_eq!(parse_http_date(s.as_bytes()), None, "{s:?}");
        }
    }

    #[test]
    fn format_then_parse_round_trips() {
        // Every day for 30 years plus some odd seconds, covering leap years and 2000/2100.
        let mut secs = 0u64;
        while secs < 5_000_000_000 {
            let text = format_http_date(secs);
            assert_eq!(parse_http_date(&text), Some(secs), "{}", fmt(secs));
            secs += 86_400 * 3 + 3_607;
        }
    }

    #[test]
    fn civil_conversions_agree_for_every_day_of_four_centuries() {
        for days in 0..146_097 * 4 {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m));
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
