//! The Python exceptions the bridge raises in the app: `ClientDisconnected` (the client went
//! away mid-body or mid-response) and `BodyError` (a request body with bad framing or over the
//! limit). Defined here, where they are raised; `lib.rs` only registers them in `_core`.

use pyo3::create_exception;
use pyo3::exceptions::PyOSError;

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
