"""The master's upkeep of its workers (`Upkeep`, a part of `Master`, master.py): keep `target`
live workers, finish a reload once its generation is ready, replace a worker over --max-rss or
past --max-worker-lifetime, retire what a reload or a replacement made redundant, retry a
replacement that failed to boot (from RETRY_FIRST_S up to RETRY_MAX_S), and kill a worker
still there past its time. What each does is in master.py's module doc; the state these
methods read and change is `Master`'s, and so are the methods they call (`_spawn`, `_become`,
`_announce`, `_reload`)."""

from __future__ import annotations

import os
import signal
import time

from . import messages, sd_notify
from .children import Child, Life, State, worker_rss
from .logs import log


#: A replacement that failed to boot is tried again after this, then twice as long each time
#: up to RETRY_MAX_S (an app that cannot import now may after a deploy finishes).
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0

#: How long workers that were told to stop at once (or killed) may take to be gone.
KILL_GRACE_S = 5


class Upkeep:
    """The upkeep methods of `Master` (which holds every attribute they use)."""

    def _retry_later(self) -> None:
        """A replacement failed to boot: the others keep serving; try again after a while."""
        self.retry_delay = min(max(self.retry_delay * 2, RETRY_FIRST_S), RETRY_MAX_S)
        self.retry_at = time.monotonic() + self.retry_delay
        self.failed_boots += 1
        serving = sum(1 for w in self.workers.values() if w.ready and not w.leaving)
        log.error("%d of %d worker(s) serving; starting a replacement again in %gs (%d "
                  "failed boot(s) since the start)", serving, self.target, self.retry_delay,
                  self.failed_boots)
        sd_notify.notify(f"STATUS={self._status()}")

    def _status(self) -> str:
        """systemd's STATUS= line while serving: the workers, and the failed replacements."""
        serving = sum(1 for w in self.workers.values() if w.ready and not w.leaving)
        line = f"serving with {serving} of {self.target} worker(s)" if serving < self.target \
            else f"serving with {serving} worker(s)"
        if self.failed_boots:
            line += f"; {self.failed_boots} replacement(s) failed to boot since the start"
        return line

    def _check_memory(self) -> None:
        """--max-rss: a ready worker over the limit is replaced like one at --max-requests;
        --max-worker-lifetime: so is one that has served for longer than that."""
        lifetime, delta = self.cfg.max_worker_lifetime, self.cfg.max_worker_lifetime_delta
        if not self.cfg.max_rss and not lifetime:
            return
        now = time.monotonic()
        for w in self.workers.values():
            if w.life is not Life.SERVING:
                continue
            if lifetime and w.serving_since and \
                    now - w.serving_since >= lifetime + w.wid * delta:  # uWSGI: (id-1)*delta
                w.become(Life.OUTGOING)
                log.info("Worker %d served for %gs (--max-worker-lifetime): starting its "
                         "replacement", w.pid, round(now - w.serving_since, 1))
                continue
            rss = worker_rss(w.pid) if self.cfg.max_rss else None
            if rss is not None and rss > self.cfg.max_rss:
                w.become(Life.OUTGOING)
                log.info("Worker %d uses %d MiB (over --max-rss): starting its replacement",
                         w.pid, rss // (1024 * 1024))

    def _check_touched(self) -> None:
        """--touch-reload: a graceful reload (as HUP) when one of the files was touched."""
        touched = self.touch_reload.changed()
        if touched and self.state is not State.STOPPING:
            self._reload(f"{touched} was touched (--touch-reload)")

    def _maintain(self) -> None:
        """Keep `target` live workers; retire what a reload or a replacement made redundant."""
        if self.state is State.STOPPING:
            return
        self._check_memory()
        if self.state is State.STARTING and \
                sum(1 for w in self.workers.values() if w.ready) >= self.target:
            self._become(State.SERVING)
            self._announce()
            if self.state is State.STOPPING:  # when_ready called sys.exit()
                return
        if self.state is State.RELOADING:
            new = [w for w in self.workers.values() if w.generation == self.generation]
            if len(new) >= self.target and all(w.ready for w in new):
                for w in self.workers.values():
                    if w.generation < self.generation and not w.leaving:
                        self._retire(w, messages.STOP)
                log.info("Reload done: %d new worker(s) serving", len(new))
                sd_notify.notify("READY=1", f"STATUS={self._status()}")
                self._become(State.SERVING)
                self.before_reload = None
            return
        staying = [w for w in self.workers.values() if w.life in (Life.BOOTING, Life.SERVING)]
        self._retire_outgoing(sum(1 for w in staying if w.ready))
        if time.monotonic() >= self.retry_at:  # else a replacement failed lately: wait
            for _ in range(self.target - len(staying)):
                self._spawn()
        extra = len(staying) - self.target
        for w in sorted(staying, key=lambda w: w.pid)[:max(0, extra)]:
            self._retire(w, messages.STOP)

    def _retire_outgoing(self, serving: int) -> None:
        """Workers that asked out (--max-requests, --max-stuck, --max-rss) serve on only while
        `serving` others fall short of `target`, the oldest leaving first: so the workers that
        serve never outnumber `target`, even when each replacement that boots asks out before
        the one that failed to boot (a busy metrics port) is replaced (they used to pile up,
        one more per replacement)."""
        outgoing = [w for w in self.workers.values() if w.life is Life.OUTGOING]  # oldest first
        keep = max(0, self.target - serving)
        for w in outgoing[:max(0, len(outgoing) - keep)]:
            self._retire(w, messages.STOP)

    def _retire(self, w: Child, signum: int) -> None:
        """Tell `w` to stop with `signum` (messages.py) and remember it was told, and until
        when it may take: past that, `_kill_overdue` kills it."""
        w.become(Life.STOPPING if w.ready else Life.CANCELLED)
        wait = self.cfg.drain_delay + self.cfg.graceful_timeout + KILL_GRACE_S \
            if signum == messages.STOP else KILL_GRACE_S
        until = time.monotonic() + wait
        w.kill_at = min(w.kill_at, until) if w.kill_at else until
        self._kill(w, signum)

    def _kill_overdue(self) -> None:
        """A worker told to stop that is still there past its time (a thread of it stuck where
        the stop cannot reach it) is killed, as gunicorn's master kills a worker past
        `graceful_timeout`: a retired worker that never ends would keep its memory, its
        database connections and its place in the connection table for good."""
        now = time.monotonic()
        for w in self.workers.values():
            if w.kill_at and now > w.kill_at:
                log.warning("Worker %d still running after it was told to stop "
                            "(--graceful-timeout %gs): killed (SIGKILL)",
                            w.pid, self.cfg.graceful_timeout)
                w.kill_at = 0.0
                self._kill(w, signal.SIGKILL)

    def _kill(self, w: Child, signum: int) -> None:
        try:
            os.kill(w.pid, signum)
        except ProcessLookupError:
            pass
