"""Type stub for sluicegate._core, the Rust extension (I/O layer + WSGI bridge).

The Python front (cli/options/config/loader) resolves and validates every option, binds the
listening sockets itself (so errors such as "address in use" are reported in Python, and so that a
pre-fork supervisor can share them later), and hands the Rust core one frozen config.
"""

from typing import Any, Callable, Mapping, Sequence, Tuple

__version__: str

# (fd, kind, server_name, server_port). kind is "tcp" or "unix". The core takes ownership of fd
# (the caller must socket.detach() it) and closes it at shutdown (so new connects are refused).
# server_name/server_port feed SERVER_NAME/SERVER_PORT.
#
# Descriptor ownership: listener fds belong to the core once passed; access_log_fd and signal_fd
# stay the caller's (the core never closes them; access_log_fd may be 1, stdout).
# Logging: the core logs app errors and warnings to the `sluicegate.error` logger (a child of the
# front's `sluicegate` logger, so its lines get the front's format).
Listener = Tuple[int, str, str, str, str]  # fd, tcp|unix, server name, server port, http|proxy|uwsgi

class Server:
    """One server process: the event loop, the elastic app thread pool, the WSGI bridge.

    config keys (all required; the Python front fills defaults):
      threads_min: int, threads_max: int            -- elastic pool bounds
      max_runnable: int                             -- admission limit of pool calls (0 = none)
      scheduler: str                                -- "adaptive", "inline" or "pool"
      header_timeout: float                         -- seconds for a whole request head (408)
      keepalive_timeout: float                      -- idle seconds between requests
      read_timeout: float                           -- seconds without body progress (app gets an error)
      min_body_rate: int                            -- bytes/s a body must average after 5 s (0 = none)
      body_timeout: float                           -- seconds a whole body may take (0 = no limit)
      write_timeout: float                          -- seconds without write progress (connection closed)
      timeout: float                                -- seconds an app call may run (504 or close, stack logged); 0 = off
      graceful_timeout: float                       -- seconds in-flight requests get at shutdown
      limit_request_line: int, limit_header_bytes: int, limit_headers: int, limit_body: int
      limit_response_headers: int                   -- largest header section the app may give
      write_high_water: int                         -- backpressure mark for streaming responses
      static: list                                  -- mounts: dicts with prefix, directory, max_age
                                                       (int|None), immutable, index (str|None),
                                                       dotfiles, follow_symlinks
      static_fallthrough: bool                      -- unmatched static requests go to the app
      max_drain: int                                -- unread request body drained up to this, else close
      root_path: str                                -- SCRIPT_NAME
      forwarded_allow_ips: str                      -- peers whose forwarding headers are read (addresses, CIDRs, unix, *)
      forwarded_headers: str                        -- "x-forwarded" or "forwarded" (RFC 7239)
      drain_delay: float                            -- seconds a graceful stop serves on with health failing (0 = off)
      log_level: str                                -- "debug" makes the core print why it refused a PROXY header
      health_path: str                              -- answered by the event loop ("" = off)
      url_scheme: str                               -- wsgi.url_scheme ("http")
      server_header: str                            -- Server header value ("" = none)
      access_log_format: str                        -- combined, common, json or a {field} template
      server_timing: bool                           -- a Server-Timing header on app responses
      metrics_bind: str                             -- this process's metrics listener (HOST:PORT, unix:PATH) or ""
      access_log_fd: int                            -- -1 = no access log; else fd to write lines to
      errors: Any                                   -- the object given to apps as wsgi.errors
      signal_fd: int                                -- read end of signal.set_wakeup_fd's pipe, or -1
      app_name: str                                 -- how log lines name the app (e.g. "pkg.wsgi:app")
      balance_fd: int                               -- with worker processes: the memfd of connection counts (io/balance.rs), or -1
      balance_slots: int                            -- entries in that table (4 bytes each)
      balance_slot: int                             -- this worker's entry
    """

    def __init__(
        self,
        app: Callable[..., Any],
        listeners: Sequence[Listener],  # any iterable of Listener tuples
        config: Mapping[str, Any],
    ) -> None: ...
    def run(self) -> int:
        """Serve until shutdown() is called (from a signal handler or another thread). Releases
        the GIL while waiting; runs Python signal handlers when signal_fd becomes readable.
        Returns after in-flight requests finished (or graceful_timeout passed, counted from the
        first shutdown request; at once after shutdown(graceful=False)): the number of requests
        the stop cut (still in the app or still sending)."""
    def shutdown(self, graceful: bool = True) -> None:
        """Stop accepting; finish in-flight requests within graceful_timeout; close idle
        keep-alive connections. Safe to call from any thread or a signal handler, and harmless
        before run() (run() then returns at once) or after it returned."""
    @property
    def stats(self) -> dict:
        """Counters for tests and diagnostics, exactly these keys: requests (every request,
        the app's and those the core answers itself, e.g. static files), accepted (connections),
        protocol_errors, timeouts, fd_exhausted (accept attempts refused for lack of file
        descriptors), app_timeouts (app calls that passed --timeout), stuck_calls (those of them
        still in the app), forwarded_malformed (forwarding or PROXY headers from trusted peers
        ignored as malformed), proxy_refused (connections closed for a missing, malformed or
        untrusted PROXY header), inline_calls, dispatched_calls, takeovers (loop hand-overs
        by the watchdog), preemptions (those of them that took the loop from a call computing
        while other work waited), handoffs (by streaming inline calls), mode ("inline" or "dispatch"),
        threads (pool threads alive), busy_threads, and admission to the pool (see
        wsgi/pool/admission.rs): max_runnable (the limit per class), runnable_short and
        runnable_long (admitted calls counting as runnable now), runnable_short_peak and
        runnable_long_peak (most at once; the short class's never passes the limit unless it is
        0), admission_queue (calls waiting now), admission_waits (calls that waited), demotions
        (admitted calls seen blocked, which stopped counting), lengthened (short calls that ran
        long and moved to the long class), admitted_blocking (calls admitted at once because
        their route was seen blocked), fast_first (long calls that waited for admitted fast
        calls to run first)."""

class ClientDisconnected(OSError):
    """Raised by wsgi.input when the client went away before the body was complete, and by
    write() when the client went away while the response was sent."""

class BodyError(OSError):
    """Raised by wsgi.input for an invalid chunked body or one larger than --limit-body."""

class Input:
    """wsgi.input: read(), read(n), readline(), readline(n), readlines(), iteration."""

class FileWrapper:
    """wsgi.file_wrapper(filelike, blksize=8192): iterable in Python; sent with sendfile(2) by
    the core when filelike has a regular-file fileno()."""

    def __init__(self, filelike: Any, blksize: int = 8192) -> None: ...
    def __iter__(self) -> "FileWrapper": ...
    def __next__(self) -> bytes: ...
    def close(self) -> None: ...
