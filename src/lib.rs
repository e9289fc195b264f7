//! `sluicegate._core`: the Rust core of sluicegate, registered as a Python extension module.
//!
//! This file only registers what Python sees. The modules are floors, bottom to top; a file
//! imports only from its own floor or below, never in a cycle (`scripts/check_floors.py`, run by
//! `./dev test`; `docs/architecture.md`):
//! - plain data: `config` (the frozen config and the types it is made of), `http_date`, `clock`;
//! - observability: `observe` (counters, timings, the access log, the counter table, the
//!   metrics page answered through proto);
//! - `io`: sockets, epoll, buffers, output queues, the event loop, static files, and the one
//!   interface through which the bridge reads and writes a request's connection;
//! - `wsgi`: the Python bridge (environ, start_response, wsgi.input, driving the iterable, the
//!   pool and its admission);
//! - `server`: wiring, who runs the app (inline or pool, the watchdog), the `Server` pyclass;
//! - this file, registration only.
//!
//! The HTTP/1.1 protocol and every static-file decision live in the `sluicegate-proto` crate,
//! which knows no sockets and no Python.

pub mod clock;
pub mod config;
pub mod http_date;
pub mod io;
pub mod observe;
pub mod peer;
pub mod server;
pub mod wsgi;

use pyo3::prelude::*;

use wsgi::errors::{BodyError, ClientDisconnected};
use wsgi::interrupt::RequestTimeout;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<server::Server>()?;
    m.add_class::<server::tls::TlsCredentials>()?;
    m.add_function(wrap_pyfunction!(server::tls::load_tls, m)?)?;
    m.add_function(wrap_pyfunction!(server::allowance::cpu_allowance, m)?)?;
    m.add_function(wrap_pyfunction!(server::prctl::parent_death_signal, m)?)?;
    m.add_function(wrap_pyfunction!(server::prctl::name_thread, m)?)?;
    m.add_function(wrap_pyfunction!(wsgi::current::current_environ, m)?)?;
    m.add_function(wrap_pyfunction!(wsgi::current::app_calls, m)?)?;
    m.add_class::<wsgi::file_wrapper::FileWrapper>()?;
    m.add_class::<wsgi::input::Input>()?;
    m.add("ClientDisconnected", py.get_type::<ClientDisconnected>())?;
    m.add("BodyError", py.get_type::<BodyError>())?;
    m.add("RequestTimeout", py.get_type::<RequestTimeout>())?;
    // The names an `--access-log-format` template may use (the options table checks them).
    m.add("ACCESS_LOG_FIELDS", observe::log_line::field_names())?;
    Ok(())
}
