//! Command-line options, in h2load's spelling where h2load has the option.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

pub const USAGE: &str = "\
usage: h3load [options] URL

An HTTP/3 load client (quinn + h3). It verifies no certificate: for loopback and test
namespaces only.

  -c N                  connections (default 1)
  -m N                  concurrent streams per connection (default 1)
  -n N                  total requests (default 1; ignored with -D)
  -D DURATION           run for DURATION instead of -n: 10, 10s, 500ms
  -t N                  client threads (default 1: one core for the client)
  -d FILE               POST the bytes of FILE as each request's body
  -H 'NAME: VALUE'      an extra request header (repeatable)
  --expect-body-len N   every response body must be exactly N bytes
  --expect-sha256 HEX   every response body must have this SHA-256
  --expect-status N     every response must have this status (default: any 2xx)
  --timeout SECONDS     limit for one request, handshake included (default 60)
  --connect-to ADDR     send to ADDR (host:port) instead of the URL's host
  --stream-window BYTES QUIC receive window per stream (default quinn's, 1.25 MB)
  --conn-window BYTES   QUIC receive window per connection (default unlimited)
  --json                print only the JSON line
  -h, --help            this text

Output: a summary like h2load's, then one line of JSON (the last line) with requests,
req/s, latency percentiles, errors, body-check mismatches, body bytes and QUIC statistics.
Exit status: 0 if every request completed with the expected status and body, 1 otherwise,
2 for a usage error.";

#[derive(Debug, Clone)]
pub struct Options {
    pub url: http::Uri,
    pub addr: SocketAddr,
    pub server_name: String,
    pub conns: usize,
    pub streams: usize,
    pub requests: u64,
    pub duration: Option<Duration>,
    pub threads: usize,
    pub body: Option<bytes::Bytes>,
    pub headers: Vec<(http::HeaderName, http::HeaderValue)>,
    pub expect_len: Option<u64>,
    pub expect_sha256: Option<[u8; 32]>,
    pub expect_status: Option<u16>,
    pub timeout: Duration,
    pub stream_window: Option<u64>,
    pub conn_window: Option<u64>,
    pub json_only: bool,
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: not a number: {v:?}"))
}

/// `10`, `10s`, `2.5s`, `500ms`.
pub fn parse_duration(v: &str) -> Result<Duration, String> {
    let (n, scale) = if let Some(ms) = v.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(s) = v.strip_suffix('s') {
        (s, 1.0)
    } else {
        (v, 1.0)
    };
    let x: f64 = n
        .parse()
        .map_err(|_| format!("-D: not a duration: {v:?}"))?;
    if !(x > 0.0 && x.is_finite()) {
        return Err(format!("-D: not a positive duration: {v:?}"));
    }
    Ok(Duration::from_secs_f64(x * scale))
}

fn parse_hex32(v: &str) -> Result<[u8; 32], String> {
    let v = v.trim();
    if v.len() != 64 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("--expect-sha256: not 64 hex digits: {v:?}"));
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&v[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn parse_header(v: &str) -> Result<(http::HeaderName, http::HeaderValue), String> {
    let (name, value) = v
        .split_once(':')
        .ok_or_else(|| format!("-H: no colon in {v:?}"))?;
    let name = http::HeaderName::from_bytes(name.trim().to_ascii_lowercase().as_bytes())
        .map_err(|e| format!("-H {v:?}: {e}"))?;
    let value = http::HeaderValue::from_str(value.trim()).map_err(|e| format!("-H {v:?}: {e}"))?;
    Ok((name, value))
}

/// The address to send to and the TLS server name, from the URL (or `--connect-to`).
fn target(url: &http::Uri, connect_to: Option<&str>) -> Result<(SocketAddr, String), String> {
    if url.scheme_str() != Some("https") {
        return Err(format!("the URL must be https://…: {url}"));
    }
    let host = url.host().ok_or_else(|| format!("no host in {url}"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = url.port_u16().unwrap_or(443);
    let dest = connect_to.map(str::to_string).unwrap_or_else(|| {
        if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    });
    let addr = dest
        .to_socket_addrs()
        .map_err(|e| format!("{dest}: {e}"))?
        .next()
        .ok_or_else(|| format!("{dest}: no address"))?;
    Ok((addr, host))
}

/// h2load's attached form, `-c16` or `-D5s`, split into `-c` `16`.
fn split_attached(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    for a in argv {
        match a.as_bytes() {
            [b'-', f, _, ..] if b"cmntDdH".contains(f) => {
                out.push(a[..2].to_string());
                out.push(a[2..].to_string());
            }
            _ => out.push(a.clone()),
        }
    }
    out
}

pub fn parse(argv: &[String]) -> Result<Option<Options>, String> {
    let argv = split_attached(argv);
    let mut it = argv.iter();
    let (mut conns, mut streams, mut requests, mut threads) = (1usize, 1usize, 1u64, 1usize);
    let (mut duration, mut body_file, mut url, mut connect_to) =
        (None, None::<PathBuf>, None, None);
    let (mut expect_len, mut expect_sha256, mut expect_status) = (None, None, None);
    let (mut timeout, mut stream_window, mut conn_window) = (Duration::from_secs(60), None, None);
    let (mut headers, mut json_only) = (Vec::new(), false);
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a}: needs a value"))
        };
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "-c" => conns = num(a, &val()?)?,
            "-m" => streams = num(a, &val()?)?,
            "-n" => requests = num(a, &val()?)?,
            "-t" => threads = num(a, &val()?)?,
            "-D" => duration = Some(parse_duration(&val()?)?),
            "-d" => body_file = Some(PathBuf::from(val()?)),
            "-H" => headers.push(parse_header(&val()?)?),
            "--expect-body-len" => expect_len = Some(num(a, &val()?)?),
            "--expect-sha256" => expect_sha256 = Some(parse_hex32(&val()?)?),
            "--expect-status" => expect_status = Some(num(a, &val()?)?),
            "--timeout" => timeout = Duration::from_secs_f64(num(a, &val()?)?),
            "--connect-to" => connect_to = Some(val()?),
            "--stream-window" => stream_window = Some(num(a, &val()?)?),
            "--conn-window" => conn_window = Some(num(a, &val()?)?),
            "--json" => json_only = true,
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if url.is_none() => {
                url = Some(s.parse::<http::Uri>().map_err(|e| format!("{s}: {e}"))?)
            }
            s => return Err(format!("more than one URL: {s}")),
        }
    }
    let url = url.ok_or("no URL")?;
    if conns == 0 || streams == 0 || threads == 0 || (duration.is_none() && requests == 0) {
        return Err("-c, -m, -t and -n must be at least 1".into());
    }
    let (addr, server_name) = target(&url, connect_to.as_deref())?;
    let body = match body_file {
        Some(p) => Some(bytes::Bytes::from(
            std::fs::read(&p).map_err(|e| format!("-d {}: {e}", p.display()))?,
        )),
        None => None,
    };
    Ok(Some(Options {
        url,
        addr,
        server_name,
        conns,
        streams,
        requests,
        duration,
        threads,
        body,
        headers,
        expect_len,
        expect_sha256,
        expect_status,
        timeout,
        stream_window,
        conn_window,
        json_only,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("x").is_err());
    }

    #[test]
    fn options() {
        let o = parse(&args(
            "-c 16 -m 10 -D 5s --expect-body-len 13 https://127.0.0.1:8443/x",
        ))
        .unwrap()
        .unwrap();
        assert_eq!((o.conns, o.streams, o.expect_len), (16, 10, Some(13)));
        assert_eq!(o.duration, Some(Duration::from_secs(5)));
        assert_eq!(o.addr, "127.0.0.1:8443".parse().unwrap());
        assert_eq!(o.server_name, "127.0.0.1");
        assert!(parse(&args("http://127.0.0.1/")).is_err());
        assert!(parse(&args("--expect-sha256 abc https://127.0.0.1/")).is_err());
        let h = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let o = parse(&args(&format!("--expect-sha256 {h} https://[::1]:9/")))
            .unwrap()
            .unwrap();
        assert_eq!(o.expect_sha256.unwrap()[..2], [0xe3, 0xb0]);
        assert_eq!(o.server_name, "::1");
        let o = parse(&args("-c16 -m10 -D5s -n7 https://127.0.0.1:1/"))
            .unwrap()
            .unwrap();
        assert_eq!((o.conns, o.streams, o.requests), (16, 10, 7));
        assert_eq!(o.duration, Some(Duration::from_secs(5)));
    }
}
