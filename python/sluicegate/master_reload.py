"""The master's reloads and upgrades (`Reloads`, a part of `Master`, master.py): a reload's
files read on a thread of their own (reading.py), the new generation of workers started with
what was read, a reload abandoned when its workers cannot boot, and the USR2 upgrade to a new
master on the same sockets (upgrade.py). What each does is in master.py's module doc; the
state these methods read and change is `Master`'s, and so are the methods they call
(`_spawn`, `_retire`, `_set_target`, `_hook`, `_become`)."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Optional, Tuple

from . import records
from . import messages, pidfile, sd_notify, tls
from .children import State, alive as _alive, describe_exit
from .errors import SluicegateError
from .hook_types import HookExit
from .logs import log
from .reading import Reading
from .upgrade import start_new_master
from .validated import Config

#: Options a reload cannot change: the sockets are the master's, bound once, and the master's
#: own process settings are set once (a USR2 upgrade applies them).
RESTART_ONLY = ("bind", "backlog", "user", "group", "umask", "pid", "preload", "config",
                "metrics_bind")


class Reloads:
    """The reload and upgrade methods of `Master` (which holds every attribute they use)."""

    def _reload(self, why: str) -> None:
        """A reload: the options resolved again and the TLS files read (on a thread of their
        own, reading.py: the loop reaps and handles signals meanwhile), then `_new_generation`.
        A reload asked while the files are read reads them again; the older read is dropped."""
        if self.reread is None:
            self._new_generation(why, None)
            return
        if self.reading is not None:
            log.info("%s: the files of the reload before are still being read: read again", why)
        self.reading = (why, Reading(self._read_files, self.pipe.wake).start())

    def _read_files(self) -> Tuple[Config, Any]:
        """On the reading thread: the options resolved again, the TLS files read and checked
        (certificate rotation: the new workers serve the files as they are now)."""
        assert self.reread is not None
        cfg = self.reread()
        if cfg.workers is None:  # `--reload` without --workers: the one worker it runs
            cfg = records.replace(cfg, workers=self.cfg.workers)
        return cfg, tls.read(cfg)

    def _check_reading(self) -> None:
        """The files of a reload read: its new generation; read with an error, or still being
        read past the timeout: the workers serve on with what they have."""
        if self.reading is None:
            return
        why, reading = self.reading
        if self.state is State.STOPPING:
            self.reading = None
        elif reading.overdue():
            self.reading = None
            log.error("%s: the configuration and TLS files could not be read within %gs (a "
                      "hung network mount? a FIFO?); the workers keep serving with the "
                      "previous configuration", why, reading.timeout)
        elif reading.done():
            self.reading = None
            try:
                read = reading.result()
            except SluicegateError as e:
                log.error("%s: the configuration is not valid (%s); the "
                          "workers keep serving with the previous one", why, e)
                return
            self._new_generation(why, read)

    def _new_generation(self, why: str, read: Optional[Tuple[Config, Any]]) -> None:
        """A new generation with what `_read_files` read (None: the options as they are).
        Reloads never overlap: one asked while a generation boots supersedes it (its workers
        are stopped, the newest configuration wins), and the configuration to go back to
        stays the one that served before the first of them."""
        before = self.before_reload or (self.cfg, self.target)
        if read is not None:
            cfg, credentials = read
            tls.adopt(credentials)
            changed = [f.name for f in records.fields(cfg)
                       if getattr(cfg, f.name) != getattr(self.cfg, f.name)]
            kept = [n for n in changed if n in RESTART_ONLY]
            if kept:
                log.warning("%s: %s changed but only take effect on a restart", why,
                            ", ".join(kept))
                # The workers boot with the master's own settings (--user among them).
                cfg = records.replace(cfg, **{n: getattr(self.cfg, n) for n in kept})
            self.cfg = cfg
            if cfg.workers:
                self._set_target(cfg.workers)
            if changed:
                log.info("%s: configuration re-read (changed: %s)", why, ", ".join(changed))
        if self.state is State.RELOADING:
            superseded = [w for w in self.workers.values()
                          if w.generation == self.generation and not w.leaving]
            log.info("%s: supersedes the reload in progress (%d of its worker(s) stopped)",
                     why, len(superseded))
            for w in superseded:
                self._retire(w, messages.STOP if w.ready else messages.CANCEL)
        if not self._hook("on_reload"):
            return
        log.info("%s: starting %d new worker(s), then stopping the old ones", why, self.target)
        sd_notify.notify("RELOADING=1", sd_notify.monotonic_usec(), "STATUS=reloading")
        self.generation += 1
        if self.state is State.STARTING:  # nothing serves yet: boot again with the new config
            for w in list(self.workers.values()):
                if not w.leaving:
                    self._retire(w, messages.STOP if w.ready else messages.CANCEL)
        else:
            self._become(State.RELOADING)
            self.before_reload = before
        for _ in range(self.target):
            self._spawn()

    def _abandon_reload(self) -> None:
        log.error("Reload abandoned: the old workers keep serving")
        sd_notify.notify("READY=1", "STATUS=reload failed; the old workers keep serving")
        self._become(State.SERVING)
        if self.before_reload is not None:  # later replacements boot with what serves now
            self.cfg, self.target = self.before_reload
            self.before_reload = None
        for w in self.workers.values():
            if w.generation == self.generation:
                self._retire(w, messages.STOP_NOW)

    def _upgrade(self) -> None:
        """USR2: start a new master on the same sockets (see the module doc)."""
        if self.restart is None:
            log.info("Received SIGUSR2: ignored (an upgrade needs the sluicegate command)")
            return
        if self.new_master is not None and _alive(self.new_master):
            log.info("Received SIGUSR2: ignored (new master %d already started)",
                     self.new_master)
            return
        if self.cfg.pid:
            try:
                pidfile.set_aside(self.cfg.pid)
            except OSError as e:
                log.error("Received SIGUSR2: cannot rename the pid file: %s", e.strerror)
        argv, cwd = self.restart
        try:
            if self.cfg.hooks is not None:
                from . import hooks  # only where hooks are set

                hooks.call(self.cfg.hooks, "pre_exec", self._hook_server())
        except HookExit:
            log.error("Received SIGUSR2: no new master (pre_exec called sys.exit())")
            return
        self.new_master = start_new_master(self.sockets, argv, cwd)
        for s in self.sockets:
            s.forget_unix_file()  # the new master removes them when it ends
        log.info("Received SIGUSR2: started new master %d on the same sockets; send TERM to "
                 "this one (%d) once it serves", self.new_master, os.getpid())

    def _upgrade_failed(self, status: int) -> None:
        """The new master of an upgrade ended while this one runs: this one stays in charge."""
        if self.cfg.pid:
            pidfile.take_back(self.cfg.pid)
        for s in self.sockets:
            s.reclaim_unix_file()
        log.error("New master %d exited (%s): this master keeps serving",
                  self.new_master, describe_exit(status))
        self.new_master = None
