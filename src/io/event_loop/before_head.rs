//! What comes before a connection's first HTTP head (`LoopState::before_head`): a metrics
//! scrape, a PROXY protocol header (`read_proxy_header`), the HTTP/2 preface. One step of a
//! connection's turn (`driver.rs`), inlined into it.

use std::sync::atomic::Ordering;

use std::net::SocketAddr;

use sluicegate_proto::forwarded::{self, Hop, PeerOrigin};
use sluicegate_proto::proxy_protocol::{self, ProxiedAddr, ProxyError};

use super::driver::reading_head;
use super::*;
use crate::io::conn::Wire;

impl LoopState {
    /// What comes before a connection's first HTTP head: a metrics scrape, a PROXY protocol
    /// header, the HTTP/2 preface. `Some`: the turn's outcome without parsing a head (more
    /// bytes needed, HTTP/2, or the connection closed); `None`: parse the head.
    #[inline(always)]
    pub(super) fn before_head(&mut self, token: usize, ctx: &LoopCtx) -> Option<Next> {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return Some(Next::NeedMore);
        };
        if conn.wire == Wire::Metrics {
            return Some(self.metrics_request(token, ctx));
        }
        if conn.wire == Wire::ProxyThenHttp {
            match read_proxy_header(conn, ctx) {
                Ok(true) => {}
                Ok(false) => {
                    reading_head(conn, ctx);
                    return Some(Next::NeedMore);
                }
                Err(why) => {
                    ctx.counters.proxy_refused.fetch_add(1, Ordering::Relaxed);
                    if ctx.settings.config.debug {
                        eprintln!("sluicegate: PROXY header refused: {why}");
                    }
                    self.close(token);
                    return Some(Next::NeedMore);
                }
            }
        }
        if conn.requests == 0
            && conn.wire == Wire::Http
            && ctx.settings.h2.is_some()
            && ctx.settings.config.http2.allows(conn.tls.is_some())
        {
            match crate::io::h2::starts_with_preface(conn.buffered()) {
                Some(true) => return Some(Next::Http2),
                Some(false) => {}
                None => {
                    reading_head(conn, ctx);
                    return Some(Next::NeedMore);
                }
            }
        }
        None
    }
}

/// The PROXY protocol header before a connection's first request: Ok(true) once it is read
/// (the connection's peer is then the client it names), Ok(false) while incomplete, Err with
/// the reason when the connection must close without an answer (no HTTP answer can be right:
/// the peer is a proxy that did not speak the protocol it was configured for).
fn read_proxy_header(conn: &mut Conn, ctx: &LoopCtx) -> Result<bool, &'static str> {
    let hop = Hop::of(conn.peer.ip(), conn.peer_origin);
    if !forwarded::trusted(ctx.settings.proxy_trust(), hop) {
        return Err("the peer is not in --forwarded-allow-ips");
    }
    match proxy_protocol::parse(conn.buffered()) {
        Ok(None) => Ok(false),
        Ok(Some((addr, used))) => {
            conn.rbuf.as_mut().unwrap().consume(used);
            if let ProxiedAddr::Proxied { source, .. } = addr {
                conn.peer = Peer::Ip(SocketAddr::new(source.ip().to_canonical(), source.port()));
                conn.upper = None; // the REMOTE_ADDR strings cached for the old peer
                conn.peer_origin = PeerOrigin::ProxyNamed;
            } else {
                conn.peer_origin = PeerOrigin::ProxyUnnamed;
            }
            conn.wire = Wire::Http;
            if let Some(link) = &conn.tls {
                // TLS starts after the header: what was read past it is ciphertext.
                let buf = conn.rbuf.as_mut().unwrap();
                let n = buf.len();
                link.start_tls(&buf.filled()[..n]);
                buf.consume(n);
            }
            Ok(true)
        }
        Err(ProxyError::Missing) => Err("no PROXY header"),
        Err(ProxyError::Malformed(why)) => Err(why),
    }
}
