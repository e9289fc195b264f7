//! `sluicegate._core`: the Rust core of sluicegate, registered as a Python extension module.
//!
//! This file only registers what Python sees. The layers, in the order a request flows:
//! `io` (sockets, epoll, output queues) → `static_files` (files served by the loop itself, no
//! Python) → `server` (who runs the app: inline or pool, the watchdog) → `wsgi` (environ,
//! start_response, wsgi.input, driving the iterable). The HTTP/1.1 protocol and every static-file
//! decision live in the `sluicegate-proto` crate, which knows no sockets and no Python.

pub mod clock;
pub mod config;
pub mod http_date;
pub mod io;
pub mod observe;
pub mod server;
pub mod static_files;
pub mod wsgi;

use pyo3::create_exception;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

create_exception!(
    _core,
    ClientDisconnected,
    PyOSError,
    "The client went away before the request body was complete, or while the response was sent."
);
create_exception!(
    _core,
    BodyError,
    PyOSError,
    "The request body is invalid (bad chunked framing) or larger than the body limit."
);

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<server::Server>()?;
    m.add_class::<wsgi::file_wrapper::FileWrapper>()?;
    m.add_class::<wsgi::input::Input>()?;
    m.add("ClientDisconnected", py.get_type::<ClientDisconnected>())?;
    m.add("BodyError", py.get_type::<BodyError>())?;
    // The names an `--access-log-format` template may use (the options table checks them).
    m.add("ACCESS_LOG_FIELDS", observe::log_line::field_names())?;
    Ok(())
}
