//! Which requests get an access log line (`--access-log-when`, uWSGI's `disable-logging` with
//! `log-4xx`, `log-5xx`, `log-slow`, `log-zero`, `log-big`, as `log_request` in uWSGI's
//! core/logging.c decides): `all` (the default), `none`, or a comma list of `4xx`, `5xx`,
//! `slow=MS` (took at least MS milliseconds), `zero` (an empty body), `big=BYTES` (a body of
//! at least BYTES). Plain values: the access log asks [`When::logs`] per request.

use super::entry::Entry;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct When {
    all: bool,
    c4xx: bool,
    c5xx: bool,
    zero: bool,
    slow_ms: Option<u64>,
    big: Option<u64>,
}

impl When {
    pub fn parse(spec: &str) -> Result<When, String> {
        let spec = spec.trim();
        if spec.is_empty() || spec == "all" {
            return Ok(When {
                all: true,
                ..When::default()
            });
        }
        let mut w = When::default();
        if spec == "none" {
            return Ok(w);
        }
        let number = |v: &str, what: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| format!("{what} takes a whole number, not {v:?}"))
        };
        for item in spec.split(',').map(str::trim) {
            match item.split_once('=') {
                None if item == "4xx" => w.c4xx = true,
                None if item == "5xx" => w.c5xx = true,
                None if item == "zero" => w.zero = true,
                Some(("slow", ms)) => w.slow_ms = Some(number(ms, "slow=MS")?),
                Some(("big", bytes)) => w.big = Some(number(bytes, "big=BYTES")?),
                _ => {
                    return Err(format!(
                        "{item:?}: expected all, none, or a comma list of 4xx, 5xx, \
                         slow=MS, zero, big=BYTES"
                    ))
                }
            }
        }
        Ok(w)
    }

    /// Whether `e` gets its line.
    pub fn logs(&self, e: &Entry<'_>) -> bool {
        self.all
            || (self.c4xx && (400..500).contains(&e.status))
            || (self.c5xx && (500..600).contains(&e.status))
            || (self.zero && e.body_bytes == 0)
            || self
                .slow_ms
                .is_some_and(|ms| e.timings.total.as_millis() >= u128::from(ms))
            || self.big.is_some_and(|b| e.body_bytes >= b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_refuse() {
        assert!(When::parse("all").unwrap().all);
        assert_eq!(When::parse("none").unwrap(), When::default());
        let w = When::parse("4xx, slow=200,big=10").unwrap();
        assert!(w.c4xx && !w.c5xx && w.slow_ms == Some(200) && w.big == Some(10));
        assert!(When::parse("3xx").unwrap_err().contains("expected all"));
        assert!(When::parse("slow=x").unwrap_err().contains("whole number"));
    }
}
