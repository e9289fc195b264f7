//! HTTP/3 (`--http3`): QUIC on a UDP socket beside each TLS listener (same address and port,
//! same certificate), served by quinn and hyperium's `h3` as tasks of the event loop: quinn's
//! runtime is the loop's task set, timer heap and epoll (`runtime.rs`), so HTTP/3 has no
//! runtime and no thread of its own. Each request stream is one [`StreamCall`], run by the same
//! bridge code as an HTTP/2 stream (`io::call_io`: its body and reply are the HTTP/3 arms),
//! inline on the loop's thread or on the pool as the scheduler says.
//! docs/http3.md says how and why.
//!
//! - [`H3Hub`]: what the server and the loop hold of it: the bound sockets and their QUIC
//!   configuration until [`H3Hub::start`] makes the endpoints on the loop; the sockets' epoll
//!   events ([`H3Hub::event`]); the sockets' drain at a stop ([`H3Hub::drain_at`], the
//!   connections hear the stop itself from the task set: `io::streams::stop`); the connections
//!   open.
//! - `runtime.rs`: quinn's `Runtime` over the loop, and the loop's UDP socket.
//! - `route.rs`: datagrams routed by connection ID between the workers sharing a port, so a
//!   worker's coming or going moves no open connection, and a stopping worker's new
//!   connections go to the others.
//! - `conn.rs`: the endpoint's accept loop and one connection's task (handshake, requests,
//!   idle timeout, GOAWAY at a stop).
//! - `stream.rs`: one request stream from its app thread: the body in, the response out.
//! - `own_answer.rs`: `--static` and `--health-path` answered by a task of the loop.
//! - `progress.rs`: a connection's send window (its share of the process's) and the close of
//!   one that stopped acknowledging.
//! - `early.rs`: the handshake within `--header-timeout`, and 0-RTT (`--http3-0rtt`): which
//!   requests that arrive before it completes are served.
//! - `tls_facts.rs`: the environ's `SSL_*` facts of a connection (quinn's session wrapped to
//!   read its ServerHello: the cipher suite and resumption).
//! - `config.rs`: the QUIC server configuration (TLS 1.3, ALPN `h3`, 0-RTT or not, transport
//!   limits).

mod amplification;
mod config;
mod conn;
mod early;
mod own_answer;
mod progress;
mod route;
pub mod runtime;
pub mod stream;
mod tls_facts;

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, OnceLock};

use crate::config::Config;
use crate::io::streams::tasks::TaskShared;
use crate::io::streams::{LoopView, Stop, StopWatch, StreamRunner};
use runtime::{LoopRuntime, LoopUdp};

/// A UDP socket bound for a TLS listener, until the loop starts its endpoint.
struct Bound {
    listener: usize,
    /// The `Alt-Svc` value that advertises it.
    alt_svc: &'static [u8],
    socket: std::net::UdpSocket,
    quic: quinn::ServerConfig,
}

/// What the server and the loop hold of HTTP/3.
pub struct H3Hub {
    config: Arc<Config>,
    bound: Mutex<Vec<Bound>>,
    /// By listener index: the `Alt-Svc` value of a listener with HTTP/3 beside it.
    alt_svc: Vec<Option<&'static [u8]>>,
    /// The endpoints' sockets, by token offset (events from the loop).
    sockets: OnceLock<Vec<Arc<LoopUdp>>>,
    /// The task set's stop, once started (a certificate reload is not applied once it moved).
    stop: OnceLock<StopWatch>,
    /// The endpoints, for a certificate reload ([`H3Hub::replace_tls`]).
    endpoints: Mutex<Vec<quinn::Endpoint>>,
    /// Connections being served (handshakes included).
    pub open: Arc<AtomicUsize>,
}

impl H3Hub {
    /// Bind a UDP socket on each TLS listener's address (`(listener, address, its TLS
    /// configuration)`); `None` when there is none.
    pub fn bind(
        config: Arc<Config>,
        tls_listeners: &[(usize, SocketAddr, Arc<rustls::ServerConfig>)],
    ) -> std::io::Result<Option<Arc<H3Hub>>> {
        let mut bound = Vec::new();
        for (listener, addr, tls) in tls_listeners {
            bound.push(Bound {
                listener: *listener,
                alt_svc: config::alt_svc_static(addr.port()),
                socket: config::bind_udp(*addr)?,
                quic: config::server_config(tls, &config)?,
            });
        }
        if bound.is_empty() {
            return Ok(None);
        }
        let mut alt_svc = Vec::new();
        for b in &bound {
            if alt_svc.len() <= b.listener {
                alt_svc.resize(b.listener + 1, None);
            }
            alt_svc[b.listener] = Some(b.alt_svc);
        }
        Ok(Some(Arc::new(H3Hub {
            config,
            alt_svc,
            bound: Mutex::new(bound),
            sockets: OnceLock::new(),
            stop: OnceLock::new(),
            endpoints: Mutex::new(Vec::new()),
            open: Arc::new(AtomicUsize::new(0)),
        })))
    }

    /// The `Alt-Svc` field value for answers on `listener` (`None`: no HTTP/3 beside it).
    #[inline]
    pub fn alt_svc(&self, listener: usize) -> Option<&'static [u8]> {
        self.alt_svc.get(listener).copied().flatten()
    }

    /// How many sockets (token offsets `0..n`) the loop routes events for.
    pub fn socket_count(&self) -> usize {
        self.sockets.get().map_or(0, Vec::len)
    }

    /// Make the endpoints on the loop: each socket registered under `token_base` plus its
    /// index, each endpoint's driver and accept loop tasks of `tasks` (whose stop they hear).
    /// Once.
    pub fn start(
        &self,
        tasks: &Arc<TaskShared>,
        registry: &mio::Registry,
        token_base: usize,
        ctx: Arc<dyn LoopView>,
        runner: Arc<dyn StreamRunner>,
        inline: Option<Arc<crate::io::streams::Inline>>,
    ) -> std::io::Result<()> {
        let bound = std::mem::take(&mut *self.bound.lock().unwrap());
        let _ = self.stop.set(tasks.stop().subscribe());
        let runtime = Arc::new(LoopRuntime(Arc::clone(tasks)));
        let share = Arc::new(conn::Share {
            config: Arc::clone(&self.config),
            ctx,
            runner,
            inline,
            open: Arc::clone(&self.open),
        });
        let mut sockets = Vec::new();
        for (i, b) in bound.into_iter().enumerate() {
            let route = route::Route::bind(b.socket.local_addr()?.port());
            let mut endpoint_config = quinn::EndpointConfig::default();
            if route.is_some() {
                endpoint_config.cid_generator(|| Box::new(route::TaggedCids::new()));
            }
            let udp = LoopUdp::new(b.socket, route, registry, mio::Token(token_base + i))?;
            sockets.push(Arc::clone(&udp));
            let endpoint = quinn::Endpoint::new_with_abstract_socket(
                endpoint_config,
                Some(b.quic),
                udp,
                Arc::clone(&runtime) as Arc<dyn quinn::Runtime>,
            )?;
            self.endpoints.lock().unwrap().push(endpoint.clone());
            tasks.spawn(conn::accept_loop(
                endpoint,
                Arc::clone(&share),
                b.listener,
                tasks.stop().subscribe(),
            ));
        }
        let _ = self.sockets.set(sockets);
        Ok(())
    }

    /// A certificate reload: new connections are served with `tls` (the listeners' new
    /// configuration); those open keep theirs. Not once a stop began (the endpoints refuse
    /// new connections then).
    pub fn replace_tls(&self, tls: &rustls::ServerConfig) -> std::io::Result<()> {
        if self
            .stop
            .get()
            .is_some_and(|s| *s.borrow() != Stop::Running)
        {
            return Ok(());
        }
        for endpoint in self.endpoints.lock().unwrap().iter() {
            endpoint.set_server_config(Some(config::server_config(tls, &self.config)?));
        }
        Ok(())
    }

    /// An epoll event for socket `index` (its token minus the base), on the loop's thread.
    pub fn event(&self, index: usize, readable: bool, writable: bool) {
        if let Some(udp) = self.sockets.get().and_then(|s| s.get(index)) {
            udp.event(readable, writable);
        }
    }

    /// The stop as the loop sees it now, before the task set's signal moves: from a graceful
    /// stop on, the sockets' routes drain (a stopping worker's new connections go to the
    /// others, `route.rs`); the endpoints and connections hear the signal itself.
    pub fn drain_at(&self, state: Stop) {
        if state >= Stop::Graceful {
            for udp in self.sockets.get().into_iter().flatten() {
                udp.drain();
            }
        }
    }
}
