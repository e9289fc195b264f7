//! gunicorn's statsd metrics of a request (`--statsd-host`): the lines gunicorn's
//! `instrument.statsd.Statsd.access` sends for each request, in its names, types and
//! spelling, made here and sent in datagrams by the I/O layer (`io::statsd`).
//!
//! Per request: `PREFIXgunicorn.request.duration:MS|ms` (milliseconds with microseconds, as
//! Python prints the float), `PREFIXgunicorn.requests:1|c|@1.0` and
//! `PREFIXgunicorn.request.status.CODE:1|c|@1.0`, each followed by `|#TAGS` with
//! `--dogstatsd-tags`. gunicorn sends each in a datagram of its own; here several go in one
//! datagram, one per line, which statsd and its exporters read the same.

use super::entry::Entry;
use super::timings::micros;

/// A request's metrics, their prefix and tags fixed at start.
pub struct StatsdLines {
    /// `--statsd-prefix` with one `.` after it (gunicorn's normalising), or empty.
    prefix: Vec<u8>,
    /// `|#` and `--dogstatsd-tags`, or empty.
    tags: Vec<u8>,
}

impl StatsdLines {
    pub fn new(prefix: &str, tags: &str) -> StatsdLines {
        // gunicorn: re.sub(r"^(.+[^.]+)\.*$", "\\g<1>.", prefix): two characters or more
        // before the trailing dots get exactly one; anything shorter stays as it is.
        let trimmed = prefix.trim_end_matches('.');
        let prefix = if trimmed.chars().count() >= 2 {
            format!("{trimmed}.").into_bytes()
        } else {
            prefix.as_bytes().to_vec()
        };
        let tags = if tags.is_empty() {
            Vec::new()
        } else {
            format!("|#{tags}").into_bytes()
        };
        StatsdLines { prefix, tags }
    }

    /// Append `e`'s three metric lines, each ending with a newline.
    pub fn make_lines(&self, out: &mut Vec<u8>, e: &Entry<'_>) {
        let us = micros(e.timings.total);
        self.line(out, b"gunicorn.request.duration", |o| {
            o.extend_from_slice(python_float_ms(us).as_bytes());
            o.extend_from_slice(b"|ms");
        });
        self.line(out, b"gunicorn.requests", |o| {
            o.extend_from_slice(b"1|c|@1.0")
        });
        let mut name = b"gunicorn.request.status.".to_vec();
        name.extend_from_slice(e.status.to_string().as_bytes());
        self.line(out, &name, |o| o.extend_from_slice(b"1|c|@1.0"));
    }

    fn line(&self, out: &mut Vec<u8>, name: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(name);
        out.push(b':');
        value(out);
        out.extend_from_slice(&self.tags);
        out.push(b'\n');
    }
}

/// Microseconds as milliseconds the way Python prints gunicorn's `float` (`12.345`, `3.0`).
fn python_float_ms(us: u64) -> String {
    let (ms, frac) = (us / 1000, us % 1000);
    let mut text = format!("{ms}.{frac:03}");
    while text.ends_with('0') && !text.ends_with(".0") {
        text.pop();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_print_as_python_floats() {
        assert_eq!(python_float_ms(0), "0.0");
        assert_eq!(python_float_ms(3), "0.003");
        assert_eq!(python_float_ms(1500), "1.5");
        assert_eq!(python_float_ms(12_345), "12.345");
        assert_eq!(python_float_ms(2_000_000), "2000.0");
    }

    #[test]
    fn prefixes_end_in_one_dot() {
        assert_eq!(StatsdLines::new("app", "").prefix, b"app.");
        assert_eq!(StatsdLines::new("app...", "").prefix, b"app.");
        assert_eq!(StatsdLines::new("", "").prefix, b"");
        assert_eq!(StatsdLines::new("a", "").prefix, b"a");
        assert_eq!(StatsdLines::new("", "env:prod,a:b").tags, b"|#env:prod,a:b");
    }
}
