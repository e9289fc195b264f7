//! The Date header value, formatted at most once per second per thread (a thread-local cache,
//! so no lock is taken on the hot path).

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use sluicegate_proto::date::{format_http_date, HTTP_DATE_LEN};

thread_local! {
    static CACHE: RefCell<(u64, [u8; HTTP_DATE_LEN])> = const { RefCell::new((u64::MAX, [0; HTTP_DATE_LEN])) };
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The current IMF-fixdate.
pub fn http_date() -> [u8; HTTP_DATE_LEN] {
    let now = unix_now();
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != now {
            *c = (now, format_http_date(now));
        }
        c.1
    })
}
