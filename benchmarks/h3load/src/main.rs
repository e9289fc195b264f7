//! h3load: an HTTP/3 load client in the manner of h2load (connections × concurrent streams,
//! a request count or a duration), which checks every answer's status and body bytes and
//! prints req/s, latency percentiles, errors and bytes, then the same as one JSON line.

mod args;
mod client;
mod tally;
mod tls;

use std::io::Write;
use std::sync::Arc;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let opts = match args::parse(&argv) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{}", args::USAGE);
            return;
        }
        Err(e) => {
            eprintln!("h3load: {e}\n\n{}", args::USAGE);
            std::process::exit(2);
        }
    };
    let client = match tls::client_config(&opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("h3load: {e}");
            std::process::exit(2);
        }
    };
    let rt = if opts.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.threads)
            .enable_all()
            .build()
    };
    let rt = rt.expect("a tokio runtime");
    let json_only = opts.json_only;
    let (ok, human, json) = rt.block_on(async move {
        let shared = Arc::new(client::Shared::new(opts, client));
        let conns: Vec<_> = (0..shared.opts.conns)
            .map(|_| tokio::spawn(client::connection(shared.clone())))
            .collect();
        let mut total = tally::Tally::default();
        for c in conns {
            match c.await {
                Ok(t) => total.merge(t),
                Err(e) => total.problem(tally::Problem::Connect, format!("connection task: {e}")),
            }
        }
        let end = total.finished.unwrap_or_else(std::time::Instant::now);
        let (human, json) = tally::report(&shared.opts, &mut total, end - shared.start);
        (total.success(&shared.opts), human, json)
    });
    // Written, not print!ed: a closed pipe (`| head`) is no reason to panic.
    let mut out = std::io::stdout().lock();
    if !json_only {
        let _ = out.write_all(human.as_bytes());
    }
    let _ = writeln!(out, "{json}");
    let _ = out.flush();
    std::process::exit(if ok { 0 } else { 1 });
}
