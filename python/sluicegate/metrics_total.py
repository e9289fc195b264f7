"""One scrape target for a server with worker processes: the master listens on `--metrics-bind`
and answers `GET /metrics` with the sum over its workers, each of which keeps its own listener
one port (or one `.N` path) further per slot.

Why the master sums, rather than one target per worker: a Prometheus user points one scrape
job at one address and writes `rate(sluicegate_requests_total[1m])`. With a target per worker
the scraper has to know ports that move as workers are replaced, and each recycled worker's
counters start again at zero. So, as prometheus_client's multiprocess mode does for gunicorn:

- counters and histograms are totals over the server's life: the live workers' counts plus
  those of every worker that ended (a worker leaves its last reading to the master as it
  stops, `Server.metrics_text()` written to a memfd the master reads when it reaps it; one
  killed without stopping leaves what the master last read from it). A recycle or a reload
  never makes a total go back, so `rate()` sees no false reset;
- gauges (connections open, pool threads, calls in flight) are summed over the live workers;
  the TLS certificate's expiry is the least;
- `process_*` are per process: the master's own without a label, each worker's with its
  `worker` label (summing them gives the whole server's memory, CPU and descriptors);
- `sluicegate_build_info` once, and `sluicegate_workers`: the workers read for this scrape.

The master runs no app code and no event loop: it reads each worker's own listener (its
address is `config.metrics_address`) over loopback when scraped, and answers with the standard
library's HTTP server on a thread of its own (a scrape every few seconds; its parsing is not
on any request's path). Each live worker's counters and gauges follow the sums under
`sluicegate_worker_*` names with its `worker` label (their own families, so a `sum()` over the
totals counts nothing twice); its histograms stay on its own listener.
"""

from __future__ import annotations

import os
import re
import socket
import threading

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Callable, Dict, List, Optional, Tuple

from . import thread_names
from .errors import StartError

if TYPE_CHECKING:
    from .metrics_http import ScrapeServer

if TYPE_CHECKING:
    #: A series: its sample name and its labels (without `worker`).
    Key = Tuple[str, Tuple[Tuple[str, str], ...]]

#: The most bytes of a worker's last reading the master reads at its end.
FINAL_MAX = 1 << 20

#: The content type of the text format, as the core answers it.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: The core's series, and the names the master gives one worker's own copy of them.
PREFIX = "sluicegate_"
PER_WORKER = "sluicegate_worker_"

_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Reading:
    """One worker's `/metrics` text, parsed: its families in order (name, help, type) and its
    samples (family, key, worker label, value)."""

    def __init__(self, text: str) -> None:
        self.families: List[Tuple[str, str, str]] = []
        self.samples: List[Tuple[str, Key, str, float]] = []
        helps: Dict[str, str] = {}
        family = ""
        for line in text.splitlines():
            if line.startswith("# HELP "):
                name, _, text_ = line[7:].partition(" ")
                helps[name] = text_
            elif line.startswith("# TYPE "):
                name, _, kind = line[7:].partition(" ")
                self.families.append((name, helps.get(name, ""), kind))
                family = name
            elif line and not line.startswith("#"):
                head, _, value = line.rpartition(" ")
                name, _, rest = head.partition("{")
                labels = _LABEL.findall(rest)
                worker = next((v for k, v in labels if k == "worker"), "")
                key = (name, tuple((k, v) for k, v in labels if k != "worker"))
                try:
                    self.samples.append((family, key, worker, float(value)))
                except ValueError:
                    continue

    def counts(self, kinds: Dict[str, str]) -> Dict[Key, float]:
        """Its counter and histogram samples (what totals keep), `process_*` left out."""
        return {key: v for fam, key, _, v in self.samples
                if kinds.get(fam) in ("counter", "histogram") and not fam.startswith("process_")}


class Totals:
    """The live workers' addresses and last readings, and what the ended ones counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: Dict[int, Tuple[str, str]] = {}  # pid -> (worker label, address)
        self._last: Dict[int, Dict[Key, float]] = {}  # pid -> its counts as last read
        self._ended: Dict[Key, float] = {}
        self._families: Dict[str, Tuple[str, str]] = {}  # name -> (help, type), in order

    def started(self, pid: int, worker: str, address: str) -> None:
        """A worker said it is ready: read it from now on."""
        with self._lock:
            self._live[pid] = (worker, address)

    def ended(self, pid: int, final_text: str) -> None:
        """A worker ended: its counts (its last reading if it left one, else what was last
        read from it) join the totals of the ended ones."""
        with self._lock:
            self._live.pop(pid, None)
            last = self._last.pop(pid, {})
            if final_text:
                reading = Reading(final_text)
                self._learn(reading)
                last = reading.counts(self._kinds())
            for key, v in last.items():
                self._ended[key] = self._ended.get(key, 0.0) + v

    def render(self, fetch: Callable[[str], Optional[str]], own: str) -> str:
        """The scrape: every live worker read with `fetch(address)` (None: no answer), summed;
        `own` is the master's `process_*` text."""
        with self._lock:
            live = dict(self._live)
        readings = {pid: (worker, fetch(address)) for pid, (worker, address) in live.items()}
        with self._lock:
            parsed: Dict[int, Tuple[str, Reading]] = {}
            for pid, (worker, text) in readings.items():
                if text is not None and pid in self._live:  # not ended while it was read
                    parsed[pid] = (worker, Reading(text))
                    self._learn(parsed[pid][1])
            kinds = self._kinds()
            for pid, (_, reading) in parsed.items():
                self._last[pid] = reading.counts(kinds)
            counts: Dict[Key, float] = dict(self._ended)
            for pid in self._live:  # one not read now still counts what it counted
                for key, v in self._last.get(pid, {}).items():
                    counts[key] = counts.get(key, 0.0) + v
            families = list(self._families.items())
        return _render(families, kinds, counts, list(parsed.values()), own)

    def _learn(self, reading: Reading) -> None:
        for name, help_, kind in reading.families:
            self._families.setdefault(name, (help_, kind))

    def _kinds(self) -> Dict[str, str]:
        return {name: kind for name, (_, kind) in self._families.items()}


def _render(
    families: List[Tuple[str, Tuple[str, str]]], kinds: Dict[str, str],
    counts: Dict[Key, float], workers: List[Tuple[str, Reading]], own: str,
) -> str:
    by_family: Dict[str, List[Tuple[Key, str, float]]] = {}
    for worker, reading in workers:
        for fam, key, _, v in reading.samples:
            by_family.setdefault(fam, []).append((key, worker, v))
    out: List[str] = []
    for name, (help_, kind) in families:
        lines: List[str] = []
        if name.startswith("process_"):
            lines = [_sample(key, v, worker) for key, worker, v in by_family.get(name, [])]
            own_lines = [ln for ln in own.splitlines() if ln.startswith(name + " ")]
            lines = own_lines + lines
        elif kind in ("counter", "histogram"):
            keys = [key for key, _, _ in by_family.get(name, [])]
            keys += [key for key in counts if _family_of(key[0], name, kind) and key not in keys]
            lines = [_sample(key, counts.get(key, 0.0)) for key in dict.fromkeys(keys)]
        else:  # a gauge: summed over the live workers (the certificate's expiry: the least)
            merged: Dict[Key, float] = {}
            pick = min if name == "sluicegate_tls_certificate_expiry_seconds" else None
            if name == "sluicegate_build_info":
                pick = max
            for key, _, v in by_family.get(name, []):
                merged[key] = v if key not in merged else \
                    (pick(merged[key], v) if pick else merged[key] + v)
            lines = [_sample(key, v) for key, v in merged.items()]
        if lines:
            out += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", *lines]
    out += _per_worker(families, by_family)
    out += ["# HELP sluicegate_workers Worker processes read for this scrape.",
            "# TYPE sluicegate_workers gauge", f"sluicegate_workers {len(workers)}"]
    return "\n".join(out) + "\n"


def _per_worker(families: List[Tuple[str, Tuple[str, str]]],
                by_family: Dict[str, List[Tuple[Key, str, float]]]) -> List[str]:
    """Each live worker's own counters and gauges, under `sluicegate_worker_*` names with its
    `worker` label: a family of their own, so `sum(rate(sluicegate_requests_total[1m]))` still
    counts every request once (histograms stay on the workers' own listeners)."""
    out: List[str] = []
    for name, (help_, kind) in families:
        if kind not in ("counter", "gauge") or not name.startswith(PREFIX) \
                or name == "sluicegate_build_info":
            continue
        per = PER_WORKER + name[len(PREFIX):]
        lines = [_sample((per, key[1]), v, worker)
                 for key, worker, v in by_family.get(name, []) if worker and key[0] == name]
        if lines:
            out += [f"# HELP {per} {help_} (one worker's)", f"# TYPE {per} {kind}", *lines]
    return out


def _family_of(sample: str, family: str, kind: str) -> bool:
    if kind == "histogram":
        return sample in (family + "_bucket", family + "_sum", family + "_count")
    return sample == family


def _sample(key: Key, v: float, worker: str = "") -> str:
    name, labels = key
    pairs = ([("worker", worker)] if worker else []) + list(labels)
    text = ",".join(f'{k}="{val}"' for k, val in pairs)
    shown = str(int(v)) if float(v).is_integer() and abs(v) < 2 ** 53 else repr(v)
    return f"{name}{{{text}}} {shown}" if text else f"{name} {shown}"


def own_process_text() -> str:
    """This process's `process_*` samples (no label), read from /proc/self ('' elsewhere)."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/stat") as f:
            boot = next(int(ln.split()[1]) for ln in f if ln.startswith("btime "))
        fds = len(os.listdir("/proc/self/fd")) - 1  # the listing's own descriptor
    except (OSError, StopIteration, IndexError, ValueError):
        return ""
    ticks = os.sysconf("SC_CLK_TCK") or 100
    # Fields counted from 3 (the state) after the command's last ')'.
    utime, stime, start, rss = (int(fields[n - 3]) for n in (14, 15, 22, 24))
    return "\n".join([
        f"process_start_time_seconds {boot + start / ticks}",
        f"process_cpu_seconds_total {(utime + stime) / ticks}",
        f"process_resident_memory_bytes {rss * os.sysconf('SC_PAGE_SIZE')}",
        f"process_open_fds {fds}",
    ]) + "\n"


class Aggregate:
    """The master's metrics listener on `address` (as --metrics-bind takes it): `listen()`
    binds it and answers on a thread of its own; the totals are kept from the start."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.totals = Totals()
        self._unix = address[5:] if address.startswith("unix:") else None
        self._http: Optional[ScrapeServer] = None
        self._closed = False
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{self.address}/metrics" if self._unix is not None \
            else f"http://{self.address}/metrics"

    def listen(self) -> None:
        """Bind (OSError if it cannot: the caller probed the address first) and serve."""
        if self._unix is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            if os.path.exists(self._unix):  # a dead socket (the caller probed it)
                os.unlink(self._unix)
        else:
            host, _, port = self.address.rpartition(":")
            host = host.strip("[]")
            family = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0][0]
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(self._unix if self._unix is not None else (host, int(port)))
            sock.listen(16)
        except OSError:
            sock.close()
            raise
        # The standard library's HTTP client and server (and the email, ssl, ... modules they
        # import: 5 MB of a process's memory, in the master and every worker forked from it)
        # are imported only where --metrics-bind is given.
        from .metrics_http import ScrapeServer, fetch
        http = ScrapeServer(sock, CONTENT_TYPE,
                            lambda: self.totals.render(fetch, own_process_text()))
        with self._lock:
            if self._closed:
                http.server_close()
                return
            self._http = http
        thread_names.start(http.serve_forever, "sg-metrics")

    def forget_in_child(self) -> None:
        """In a worker just forked: close the listener's descriptor, nothing else."""
        if self._http is not None:
            self._http.socket.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            http, self._http = self._http, None
        if http is None:
            return
        http.shutdown()
        http.server_close()
        if self._unix is not None:
            try:
                os.unlink(self._unix)
            except OSError:
                pass


def master_listener(address: str, probe: Callable[[str], None], *,
                    upgraded: bool) -> Aggregate:
    """The master's listener on `address`, bound before any worker starts: a StartError, one
    line, if it cannot be (`probe(address)` raises the front's words for why). The new master
    of a USR2 upgrade finds it (and its workers' addresses) held by the old master, which
    serves them until it stops: it says so and exits, and the old master keeps serving."""
    aggregate = Aggregate(address)
    try:
        probe(address)
        aggregate.listen()
    except (StartError, OSError) as e:
        why = f"cannot listen: {e.strerror}" if isinstance(e, OSError) else str(e)
        if upgraded:
            raise StartError(f"--metrics-bind {address}: the old master serves it until it "
                             "stops, and its workers their own addresses: an upgrade (USR2) "
                             "cannot start beside them with --metrics-bind; restart instead"
                             ) from None
        if isinstance(e, OSError):  # taken since the probe
            raise StartError(f"--metrics-bind {address}: {why}") from None
        raise
    return aggregate
