//! What every request shares: the app, its environ builder, the config, the loop's context,
//! the error logger and the `--timeout` registry ([`Bridge`], built once under the GIL), and
//! the small helpers the bridge's files share (`type_name`). Apart from `wsgi/mod.rs` so that
//! the bridge's files import it without importing their parent (which declares them).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::deadline;
use super::environ::EnvironBuilder;
use super::input::Input;
use super::interrupt::RequestTimeout;
use crate::config::Config;
use crate::io::event_loop::{Counters, LoopCtx};

/// The type name of a Python object, for error messages.
pub fn type_name(o: &Bound<'_, PyAny>) -> String {
    o.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Everything a request needs that is the same for all requests. Built once under the GIL.
pub struct Bridge {
    pub app: Py<PyAny>,
    /// How warnings name the app (its repr).
    pub app_name: String,
    pub environ: EnvironBuilder,
    /// wsgi.input for requests without a body (reads return b"").
    pub empty_input: Py<Input>,
    /// The one frozen config, shared with the event loop (`LoopSettings::config`).
    pub config: Arc<Config>,
    /// The Server header value, made 'static once so each response borrows it.
    pub server_header: &'static [u8],
    pub loop_ctx: Arc<LoopCtx>,
    /// logging.getLogger("sluicegate.error")
    logger: Py<PyAny>,
    pub warned_bare_bytes: AtomicBool,
    /// `--timeout`: the registry of app calls and its watcher's state; None when off.
    pub deadlines: Option<Arc<deadline::Deadlines>>,
}

/// `value` as a `'static` slice, so responses (and the senders kept between them) borrow it
/// without a lifetime or a count. Each distinct value is leaked once per process: a process
/// that starts and stops servers (tests, embedding) reuses it rather than leaking it per start.
fn static_server_header(value: &[u8]) -> &'static [u8] {
    static MADE: std::sync::Mutex<Vec<&'static [u8]>> = std::sync::Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap();
    if let Some(&known) = made.iter().find(|&&known| known == value) {
        return known;
    }
    let leaked: &'static [u8] = Box::leak(value.to_vec().into_boxed_slice());
    made.push(leaked);
    leaked
}

impl Bridge {
    /// `--http3`: the `Alt-Svc` value HTTP/1.1 and HTTP/2 answers on `listener` carry (its
    /// TLS listeners' only).
    #[inline]
    pub fn alt_svc(&self, listener: usize) -> Option<&'static [u8]> {
        let hub = self.loop_ctx.settings.h3.as_ref()?;
        hub.alt_svc(listener)
    }

    pub fn new(
        py: Python<'_>,
        app: Py<PyAny>,
        environ: EnvironBuilder,
        config: Arc<Config>,
        loop_ctx: Arc<LoopCtx>,
    ) -> PyResult<Bridge> {
        let logging = py.import("logging")?;
        let logger = logging.call_method1("getLogger", ("sluicegate.error",))?;
        // Log lines name the app as the user gave it ("pkg.wsgi:app"), else by its repr.
        let app_name = if config.app_name.is_empty() {
            app.bind(py)
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_default()
        } else {
            config.app_name.clone()
        };
        let server_header = static_server_header(&config.server_header);
        Ok(Bridge {
            server_header,
            app,
            app_name,
            empty_input: environ.empty_input.clone_ref(py),
            environ,
            logger: logger.unbind(),
            warned_bare_bytes: AtomicBool::new(false),
            // Calls are registered for --timeout, and for the metrics listener's
            // /debug/requests (then with no deadline); the control socket's `requests` reads
            // the same registry (`Server.in_flight`). Not for the control socket alone: the
            // registry costs about 900 instructions a request (6% of a hello world).
            deadlines: (config.timeout.is_some() || !config.metrics_bind.is_empty()).then(|| {
                let stuck = Arc::clone(&loop_ctx.counters.stuck_calls);
                let t = config.timeout.unwrap_or(deadline::NO_DEADLINE);
                Arc::new(deadline::Deadlines::new(t, stuck))
            }),
            config,
            loop_ctx,
        })
    }

    /// Log an app error with its traceback (to the error log, never to the client). A call
    /// ended by `--timeout` (`interrupt`) gets one line: its stack was logged when it was
    /// answered.
    pub fn log_exception(&self, py: Python<'_>, err: &PyErr, what: &str) {
        if err.is_instance_of::<RequestTimeout>(py) {
            let line = format!("{what}: ended by sluicegate.RequestTimeout (--timeout)");
            self.log_warning(py, &line);
            return;
        }
        let kwargs = PyDict::new(py);
        // PyO3 keeps the traceback beside the value: pass the full (type, value, tb) triple.
        let exc_info = (err.get_type(py), err.value(py), err.traceback(py));
        let _ = kwargs.set_item("exc_info", exc_info);
        if self
            .logger
            .bind(py)
            .call_method("error", (what,), Some(&kwargs))
            .is_err()
        {
            eprintln!("sluicegate: {what}: {err}");
        }
    }

    pub fn log_error(&self, py: Python<'_>, msg: &str) {
        let _ = self.logger.bind(py).call_method1("error", (msg,));
    }

    pub fn log_warning(&self, py: Python<'_>, msg: &str) {
        let _ = self.logger.bind(py).call_method1("warning", (msg,));
    }

    /// The server's counters (the loop's and the bridge's are the same ones).
    pub fn counters(&self) -> &Counters {
        &self.loop_ctx.counters
    }
}
