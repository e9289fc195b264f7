//! The app's status and headers as `start_response` received them, validated and turned into
//! bytes once: PEP 3333 "native strings" (str, latin-1) become the bytes that go on the wire,
//! and proto (`h1::response::classify_app_header`) decides what each header means: ordinary,
//! the body's Content-Length, or hop-by-hop (the server's business, not sent). This module only
//! converts Python objects and raises the app's errors; it decides nothing about HTTP itself.
//! The headers are kept as the wire's lines, so that the HTTP/1.1 head takes them in one copy.
//! Each thread keeps the last status and header list it converted (`Seen`): the same objects
//! passed again (a module-level header list) give the same head without converting it again.

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use sluicegate_proto::h1::encode::{names_added_header, EncodedLines};
use sluicegate_proto::h1::response::{
    app_status_code, classify_app_header, AppHeadError, AppHeader,
};

use super::bridge::type_name;

/// The app's answer as start_response recorded it.
#[derive(Default)]
pub struct AppHead {
    /// start_response was called.
    pub started: bool,
    pub status_code: u16,
    /// The status line's text (e.g. b"200 OK", `hbuf[..status_len]`), then the headers,
    /// latin-1 bytes, in the app's order (hop-by-hop removed), as they go on the wire
    /// (`Name: value\r\n` each), all in one buffer with (name start, name end, value end)
    /// offsets in `hidx` (the value starts 2 bytes after the name's end): one allocation per
    /// response instead of two per header and one for the status, and the HTTP/1.1 head copies
    /// the lines at once (`lines`) instead of four pieces per header.
    hbuf: Vec<u8>,
    status_len: usize,
    hidx: HeaderOffsets,
    /// The app set Date, or Server (the server adds neither then).
    has_date: bool,
    has_server: bool,
    /// The app's Content-Length, if it set one.
    pub content_length: Option<u64>,
    /// The app set `Connection: close`.
    pub wants_close: bool,
}

/// The offsets of the app's headers in `AppHead::hbuf`: the first [`INLINE_HEADERS`] in place
/// (most apps set fewer), the rest in a vector.
#[derive(Default, Clone)]
struct HeaderOffsets {
    inline: [(u32, u32, u32); INLINE_HEADERS],
    len: usize,
    more: Vec<(u32, u32, u32)>,
}

const INLINE_HEADERS: usize = 8;

/// Between a header's name and value in `AppHead::hbuf`, and after its value: the wire's.
const SEPARATOR: &[u8] = b": ";
const LINE_END: &[u8] = b"\r\n";

/// A head buffer up to this size goes on to the next response (`AppHead::take_buffer`).
const HEAD_BUFFER_KEPT_MAX: usize = 4096;

impl HeaderOffsets {
    fn push(&mut self, entry: (u32, u32, u32)) {
        if self.len < INLINE_HEADERS {
            self.inline[self.len] = entry;
        } else {
            self.more.push(entry);
        }
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &(u32, u32, u32)> {
        self.inline[..self.len.min(INLINE_HEADERS)]
            .iter()
            .chain(self.more.iter())
    }
}

impl AppHead {
    /// The status line's text, e.g. b"200 OK".
    pub fn status(&self) -> &[u8] {
        &self.hbuf[..self.status_len]
    }

    /// How many headers the app set (hop-by-hop ones dropped).
    pub fn header_count(&self) -> usize {
        self.hidx.len
    }

    /// (name, value) pairs in the app's order.
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.hidx.iter().map(move |&(n, m, e)| {
            (
                &self.hbuf[n as usize..m as usize],
                &self.hbuf[m as usize + SEPARATOR.len()..e as usize],
            )
        })
    }

    /// The headers as encoded lines (`Name: value\r\n` each), and which of Date, Server and
    /// Content-Length they hold.
    pub fn lines(&self) -> EncodedLines<'_> {
        EncodedLines {
            bytes: &self.hbuf[self.status_len..],
            has_date: self.has_date,
            has_server: self.has_server,
            has_length: self.content_length.is_some(),
        }
    }

    /// This head's buffer, emptied, for the next response's (`parse_head`), if it is of a size
    /// worth keeping (a thread keeps one: see `start_response::Callables`).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        let mut b = std::mem::take(&mut self.hbuf);
        if b.capacity() > HEAD_BUFFER_KEPT_MAX {
            return Vec::new();
        }
        b.clear();
        b
    }

    /// A copy of this head, built in `hbuf` (emptied first).
    fn copy_into(&self, mut hbuf: Vec<u8>) -> AppHead {
        hbuf.clear();
        hbuf.extend_from_slice(&self.hbuf);
        AppHead {
            hbuf,
            hidx: self.hidx.clone(),
            ..*self
        }
    }

    /// The head of an answer the server sends instead of the app's (an error answer).
    pub fn server_answer(status: u16, reason: &str) -> AppHead {
        let hbuf = format!("{status} {reason}").into_bytes();
        AppHead {
            started: true,
            status_len: hbuf.len(),
            hbuf,
            status_code: status,
            ..AppHead::default()
        }
    }
}

/// Set once the first hop-by-hop header from the app has been logged (one line per process).
static WARNED_HOP_BY_HOP: AtomicBool = AtomicBool::new(false);

/// The bytes of a str that is stored one byte per character (every character below 256):
/// exactly its latin-1 encoding, read in place. None for other strings (and under the stable
/// ABI, where the layout is not visible): the caller converts them.
#[cfg(not(any(Py_LIMITED_API, Py_3_14, PyPy, GraalPy)))]
#[inline]
fn latin1_bytes<'a>(s: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    use pyo3::ffi;
    let p = s.as_ptr();
    // A compact ASCII str (what literals and most computed strings are) keeps its characters,
    // one byte each, right after its header, for as long as it lives: `PyUnicode_DATA` points
    // there and `PyUnicode_GET_LENGTH` counts them.
    // SAFETY: `p` is a live object borrowed for 'a; PyUnicode_Check reads its type, the other
    // macros are only used on a str and read its header; the slice is the str's own storage.
    unsafe {
        if ffi::PyUnicode_Check(p) == 0 {
            return None;
        }
        #[cfg(not(Py_3_12))]
        if ffi::PyUnicode_IS_READY(p) == 0 {
            return None;
        }
        if ffi::PyUnicode_IS_COMPACT_ASCII(p) == 0 {
            return None;
        }
        let data = ffi::PyUnicode_DATA(p) as *const u8;
        Some(std::slice::from_raw_parts(
            data,
            ffi::PyUnicode_GET_LENGTH(p) as usize,
        ))
    }
}

#[cfg(any(Py_LIMITED_API, Py_3_14, PyPy, GraalPy))]
#[inline]
fn latin1_bytes<'a>(_s: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    None
}

/// Append a str header/status as latin-1 bytes (PEP 3333 "native strings") to `out`.
fn push_latin1(out: &mut Vec<u8>, s: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    if let Some(b) = latin1_bytes(s) {
        out.extend_from_slice(b);
        return Ok(());
    }
    let s = s
        .cast::<PyString>()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be str, not {}", type_name(s))))?;
    let text = s.to_str()?;
    if text.is_ascii() {
        out.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    for c in text.chars() {
        let b = u8::try_from(u32::from(c))
            .map_err(|_| PyValueError::new_err(format!("{what} is not latin-1: {text:?}")))?;
        out.push(b);
    }
    Ok(())
}

/// Hop-by-hop headers are dropped, not refused: PEP 3333 forbids them, but apps (and
/// frameworks) set `Connection: close` or `Keep-Alive` in good faith, and failing the request
/// would punish the client for it. The server owns connection management (RFC 9110 §7.6.1),
/// honours a `Connection: close` by closing after the response, and says once in the error
/// log that it drops them, so that nobody wonders where the header went.
fn warn_hop_by_hop_once(py: Python<'_>, name: &[u8]) {
    if WARNED_HOP_BY_HOP.swap(true, Ordering::Relaxed) {
        return;
    }
    let msg = format!(
        "the app set the hop-by-hop header {:?}; it is not sent: the server manages the connection (RFC 9110 7.6.1; 'Connection: close' is honoured by closing after the response). This warning is shown once",
        String::from_utf8_lossy(name)
    );
    if let Ok(logger) = py
        .import("logging")
        .and_then(|l| l.call_method1("getLogger", ("sluicegate.error",)))
    {
        let _ = logger.call_method1("warning", (msg,));
    }
}

/// Convert and validate what the app passed to start_response. `buf`: an empty buffer to
/// build the head in (a previous response's, or a new one).
/// `max_headers`: the largest header section (names and values, bytes) the app may give
/// (`--limit-response-headers`): a 1 MiB header would otherwise go on the wire as given.
pub fn parse_head(
    status: &Bound<'_, PyAny>,
    headers: &Bound<'_, PyAny>,
    max_headers: usize,
    mut hbuf: Vec<u8>,
) -> PyResult<AppHead> {
    let list = headers.cast::<PyList>().ok();
    let mut keep = false;
    if let Some(list) = list {
        // One look at the thread's kept head: the same objects, or a miss counted.
        let seen = KEPT_HEAD.with(|k| {
            let mut k = k.borrow_mut();
            if let Some(head) = k
                .seen
                .as_ref()
                .and_then(|s| s.same(status, list, max_headers))
            {
                let head = head.copy_into(std::mem::take(&mut hbuf));
                k.misses = 0;
                return Some(head);
            }
            k.misses = k.misses.saturating_add(1);
            keep = k.misses <= MISSES_KEPT || k.misses.is_multiple_of(KEEP_EVERY);
            None
        });
        if let Some(head) = seen {
            return Ok(head);
        }
    }
    let head = parse_new(status, headers, max_headers, hbuf)?;
    if let (true, Some(list)) = (keep, list) {
        remember(status, list, max_headers, &head);
    }
    Ok(head)
}

/// [`parse_head`]'s conversion and validation, for a status and headers not seen just before.
fn parse_new(
    status: &Bound<'_, PyAny>,
    headers: &Bound<'_, PyAny>,
    max_headers: usize,
    mut hbuf: Vec<u8>,
) -> PyResult<AppHead> {
    hbuf.reserve(256);
    push_latin1(&mut hbuf, status, "status")?;
    let status_b = &hbuf[..];
    let code = app_status_code(status_b).map_err(|_| {
        PyValueError::new_err(format!(
            "invalid status line {:?}",
            String::from_utf8_lossy(status_b)
        ))
    })?;
    if code < 200 {
        // A 1xx is interim (RFC 9110 §15.2): sent as the answer, the client (or a proxy that
        // reuses the connection for someone else) would take the next response as this one's.
        return Err(PyValueError::new_err(format!(
            "status {:?} is interim (1xx); a WSGI app must give a final status (RFC 9110 15.2)",
            String::from_utf8_lossy(status_b)
        )));
    }
    let mut head = AppHead {
        started: true,
        status_len: hbuf.len(),
        status_code: code,
        hbuf,
        ..AppHead::default()
    };
    // A list (what nearly every app passes) is walked by index: no iterator object.
    if let Ok(list) = headers.cast::<PyList>() {
        for item in list.iter() {
            add_header(&mut head, &item, max_headers)?;
        }
    } else {
        for item in headers.try_iter()? {
            add_header(&mut head, &item?, max_headers)?;
        }
    }
    Ok(head)
}

/// Convert and validate the headers the app passes to `wsgi.early_hints`, as `start_response`'s
/// are (`add_header`: CR, LF or NUL raise; hop-by-hop headers are dropped). The result has no
/// status; which of its headers go in the interim answer is proto's (`h1::interim`).
pub fn parse_hints(headers: &Bound<'_, PyAny>, max_headers: usize) -> PyResult<AppHead> {
    if headers.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "wsgi.early_hints takes a list of (name, value) tuples, not a str",
        ));
    }
    let mut head = AppHead::default();
    for item in headers.try_iter()? {
        add_header(&mut head, &item?, max_headers)?;
    }
    Ok(head)
}

/// One `(name, value)` of the app's header list, converted, validated and classified.
fn add_header(head: &mut AppHead, item: &Bound<'_, PyAny>, max_headers: usize) -> PyResult<()> {
    let pair = item.cast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!(
            "each header must be a tuple, not {}",
            type_name(item)
        ))
    })?;
    if pair.len() != 2 {
        return Err(PyValueError::new_err(
            "each header must be a (name, value) tuple",
        ));
    }
    let start = head.hbuf.len();
    push_latin1(&mut head.hbuf, &*pair.get_borrowed_item(0)?, "header name")?;
    let mid = head.hbuf.len();
    head.hbuf.extend_from_slice(SEPARATOR);
    push_latin1(&mut head.hbuf, &*pair.get_borrowed_item(1)?, "header value")?;
    let end = head.hbuf.len();
    let name = &head.hbuf[start..mid];
    let value = &head.hbuf[mid + SEPARATOR.len()..end];
    // The limit counts names and values, not the separators and line ends between them.
    let line_ends = SEPARATOR.len() + (SEPARATOR.len() + LINE_END.len()) * head.hidx.len;
    if end - head.status_len - line_ends > max_headers {
        return Err(PyValueError::new_err(format!(
            "the response headers pass --limit-response-headers ({max_headers} bytes) at header {:?} ({} bytes)",
            String::from_utf8_lossy(name),
            end - start
        )));
    }
    let keep = match classify_app_header(name, value) {
        Ok(AppHeader::Keep) => true,
        Ok(AppHeader::HopByHop { closes }) => {
            head.wants_close |= closes;
            warn_hop_by_hop_once(item.py(), name);
            false
        }
        Ok(AppHeader::ContentLength(v)) => {
            if head.content_length.is_some_and(|c| c != v) {
                return Err(PyValueError::new_err(
                    "conflicting Content-Length headers set by the app",
                ));
            }
            let first = head.content_length.is_none();
            head.content_length = Some(v);
            first
        }
        Err(AppHeadError::BadName) => {
            return Err(PyValueError::new_err(format!(
                "invalid header name {:?}",
                String::from_utf8_lossy(name)
            )))
        }
        Err(AppHeadError::BadValue) => {
            return Err(PyValueError::new_err(format!(
                "header {:?} has a value with CR, LF, NUL or another control character",
                String::from_utf8_lossy(name)
            )))
        }
        Err(AppHeadError::BadContentLength | AppHeadError::BadStatus) => {
            return Err(PyValueError::new_err(
                "invalid Content-Length set by the app",
            ))
        }
    };
    if keep {
        let (date, server, _) = names_added_header(name);
        head.has_date |= date;
        head.has_server |= server;
        head.hidx.push((start as u32, mid as u32, end as u32));
        head.hbuf.extend_from_slice(LINE_END);
    } else {
        head.hbuf.truncate(start);
    }
    Ok(())
}

/// The status and header list this thread converted last, and what they became: an app that
/// passes the same objects again (a module-level list of constant tuples, as health checks and
/// hello worlds do) gets the same head without converting and validating each header again
/// (S4's 15 headers: about a fifth of the request's instructions). "The same" is identity: the
/// status object and each tuple of the list are the very objects seen last time, which this
/// thread holds references to (so no other object can take their addresses); tuples and str are
/// immutable, so their contents are the same too. Only exact tuples of exact str are kept (a
/// subclass could convert otherwise). Like the kept callables (`start_response::Callables`), the
/// references are dropped by the server's threads before they end ([`drop_seen`]); a thread
/// that ends otherwise leaves them, as Python may be gone by then.
struct Seen {
    status: Py<PyAny>,
    items: Vec<Py<PyAny>>,
    max_headers: usize,
    head: AppHead,
}

/// A thread's kept head, and the lists converted in a row that were not it: an app that builds
/// its headers anew for every answer stops paying for keeping them (kept again every
/// `KEEP_EVERY`). One thread-local for both: one look per response.
#[derive(Default)]
struct KeptHead {
    seen: Option<Seen>,
    misses: u32,
}

thread_local! {
    static KEPT_HEAD: RefCell<ManuallyDrop<KeptHead>> =
        const { RefCell::new(ManuallyDrop::new(KeptHead { seen: None, misses: 0 })) };
}

/// After this many misses in a row, a new list is kept only every `KEEP_EVERY`.
const MISSES_KEPT: u32 = 4;
const KEEP_EVERY: u32 = 64;

impl Seen {
    /// The kept head, if `status` and `list` are the objects it was made from.
    fn same(
        &self,
        status: &Bound<'_, PyAny>,
        list: &Bound<'_, PyList>,
        max_headers: usize,
    ) -> Option<&AppHead> {
        if !status.is(&self.status) || max_headers != self.max_headers {
            return None;
        }
        if list.len() != self.items.len() {
            return None;
        }
        for (i, item) in self.items.iter().enumerate() {
            // `list` is a live list and `i` is below its length (checked above, and nothing runs
            // in between that could shrink it: no Python code, the GIL or the list's critical
            // section held by the caller's attached thread).
            // SAFETY: an in-bounds read of a live list; the borrowed pointer is only compared.
            let p = unsafe { pyo3::ffi::PyList_GetItem(list.as_ptr(), i as pyo3::ffi::Py_ssize_t) };
            if p != item.as_ptr() {
                return None;
            }
        }
        Some(&self.head)
    }
}

/// Keep what `status` and `list` became (see [`Seen`]), if they are exact str and tuples.
fn remember(
    status: &Bound<'_, PyAny>,
    list: &Bound<'_, PyList>,
    max_headers: usize,
    head: &AppHead,
) {
    if !status.is_exact_instance_of::<PyString>() {
        return;
    }
    let mut items = Vec::with_capacity(list.len());
    for item in list.iter() {
        let Ok(pair) = item.cast_exact::<PyTuple>() else {
            return;
        };
        if !pair.iter().all(|x| x.is_exact_instance_of::<PyString>()) {
            return;
        }
        items.push(item.unbind());
    }
    let kept = head.copy_into(Vec::new());
    let seen = Seen {
        status: status.clone().unbind(),
        items,
        max_headers,
        head: kept,
    };
    KEPT_HEAD.with(|k| k.borrow_mut().seen = Some(seen));
}

/// Drop the kept head's references (a server thread about to end; see [`Seen`]).
pub fn drop_seen(_py: Python<'_>) {
    KEPT_HEAD.with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            k.seen = None;
        }
    });
}
