"""`sluicegate ctl`: the client of the control socket (control_server.py is the server side,
control_protocol.py what both agree on).

    sluicegate ctl [--socket PATH | --pid PID] [--json] COMMAND

COMMAND is `status`, `requests [--stacks]`, `reload`, `workers +N|-N`, `reopen-logs`, `stop`
or `top [--interval S]`. Without `--socket` or `--pid`, the one server whose default socket is
in `$XDG_RUNTIME_DIR` (or /tmp) is chosen; several are listed and none is guessed. `--json`
prints the server's answer as it came; otherwise a table. `top` redraws the status and the
oldest in-flight requests every `--interval` seconds (plain ANSI, on the terminal's alternate
screen) until `q` or Ctrl-C. Exit status: 0, 1 when the server said no or cannot be reached,
2 for a usage error.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import select
import socket
import stat
import sys
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, List, NoReturn, Optional, Sequence

from . import children, control_protocol as protocol

#: How long the client waits for an answer (a master asks each worker in turn).
ANSWER_TIMEOUT_S = 30.0

#: In-flight requests `top` shows under the workers.
TOP_REQUESTS = 10


class CtlError(Exception):
    """One line for standard error, exit status 1."""


def find_socket(path: Optional[str], pid: Optional[int]) -> str:
    """The socket to talk to: `--socket` as given; else the default one of `--pid`, or the one
    server's in the runtime directory, only if it is to be trusted (`untrusted`)."""
    if path:
        return path
    if pid is not None:
        candidate = protocol.default_path(pid)
        why = untrusted(candidate, pid)
        if why:
            raise CtlError(f"{candidate}: not used: {why}")
        return candidate
    found, skipped = [], []
    for candidate in sorted(glob.glob(os.path.join(protocol.runtime_dir(), "sluicegate-*.ctl"))):
        m = re.search(r"sluicegate-(\d+)\.ctl$", candidate)
        if not m or not children.alive(int(m.group(1))):
            continue
        why = untrusted(candidate, int(m.group(1)))
        if why:
            skipped.append(f"{candidate} ({why})")
        else:
            found.append(candidate)
    if len(found) == 1:
        return found[0]
    if not found:
        raise CtlError(f"no server's control socket in {protocol.runtime_dir()}: "
                       "give --socket PATH or --pid PID"
                       + ("; not used: " + ", ".join(skipped) if skipped else ""))
    raise CtlError("several servers run: give --socket PATH or --pid PID: " + ", ".join(found))


def _trusted_uid(uid: int) -> bool:
    return uid in (0, os.geteuid())


def untrusted(candidate: str, pid: int) -> Optional[str]:
    """Why a default socket found by its name is not to be talked to (None: it may be): the
    file must be a socket owned by root or by this user, and its process (the PID of its
    name) run as one of them. Any user may create a file in /tmp, and one of a runtime
    directory's names with another's live PID: it would be handed this user's commands and
    its answers would be printed on this user's terminal."""
    try:
        st = os.lstat(candidate)
    except OSError as e:
        return e.strerror or str(e)
    if not stat.S_ISSOCK(st.st_mode):
        return "not a socket"
    if not _trusted_uid(st.st_uid):
        return f"owned by uid {st.st_uid}, neither root nor this user"
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return f"process {pid} cannot be looked at"
    if not _trusted_uid(owner):
        return f"process {pid} runs as uid {owner}, neither root nor this user"
    return None


def ask(path: str, command: Dict[str, Any]) -> Dict[str, Any]:
    """Send one command and read the answer (CtlError if there is none)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(ANSWER_TIMEOUT_S)
    try:
        sock.connect(path)
        protocol.send_line(sock, command)
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        raise CtlError(f"{path}: {e.strerror or e}") from None
    finally:
        sock.close()
    try:
        answer = json.loads(data)
    except ValueError:
        raise CtlError(f"{path}: no answer") from None
    if not isinstance(answer, dict):
        raise CtlError(f"{path}: no answer")
    return answer


# -- what a person reads --------------------------------------------------------------------


def _duration(s: Optional[float]) -> str:
    if s is None:
        return "-"
    s = float(s)
    if s < 60:
        return f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"


def _size(n: Optional[int]) -> str:
    return "-" if n is None else f"{n / (1024 * 1024):.1f}M"


def printable(text: Any) -> str:
    """`text` with every character a terminal could act on (control characters, escape
    sequences' ESC, C1 controls, bidirectional overrides: whatever `str.isprintable` refuses
    but the space) written as a Python escape (`\\x1b`): a server's answer carries what
    clients sent it (request paths), and printed raw, it could rewrite the screen."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else
                   (f"\\x{ord(c):02x}" if ord(c) < 0x100 else
                    f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
                   for c in text)


def _cell(v: Any) -> str:
    return "-" if v is None else printable(v)


def _table(header: Sequence[str], rows: List[Sequence[str]]) -> List[str]:
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
            for r in [header, *rows]]


def render_allowance(a: Dict[str, Any]) -> str:
    """The CPU line: the cgroup's quota against the CPUs, and how often the quota stopped it."""
    cpus = f"{a['cpus']} CPU" + ("s" if a["cpus"] != 1 else "")
    if a.get("quota") is None:
        text = f"cpu  {cpus}, no quota"
    else:
        period_ms = a["period_s"] * 1000
        text = (f"cpu  quota {a['quota']:g} of {cpus} ({a['quota'] * period_ms:g} ms of every "
                f"{period_ms:g} ms)")
    if a.get("nr_periods") is not None:
        text += (f"  throttled {a['nr_throttled']} of {a['nr_periods']} periods, "
                 f"{a['throttled_s']:.3f}s")
    return text


def render_status(answer: Dict[str, Any]) -> List[str]:
    m = answer["master"]
    lines = [f"{m['role']} {m['pid']}  {m['state']}  up {_duration(m.get('uptime'))}  "
             f"workers {m['workers']}" + (f"  rss {_size(m.get('rss'))}" if 'rss' in m else "")]
    if m.get("allowance"):
        lines.append(render_allowance(m["allowance"]))
    rows = [[str(w["worker"]), str(w["pid"]), _duration(w.get("age")), _cell(w.get("requests")),
             _cell(w.get("in_flight")), _cell(w.get("connections")), _size(w.get("rss")),
             w["state"] + ("" if w.get("answered", True) or w["state"] in protocol.NOT_SERVING
                           else " (no answer)")]
            for w in answer["workers"]]
    return lines + [""] + _table(
        ["WORKER", "PID", "AGE", "REQUESTS", "IN FLIGHT", "CONNS", "RSS", "STATE"], rows)


def render_requests(answer: Dict[str, Any], limit: Optional[int] = None) -> List[str]:
    calls = answer["requests"]
    shown = calls[:limit] if limit is not None else calls
    rows = [[str(c["worker"]), str(c["pid"]), f"{c['age']:.3f}s", c["method"],
             c["path"] + ("  (past --timeout)" if c.get("stuck") else "")] for c in shown]
    lines = [f"{len(calls)} request(s) in flight"]
    if answer.get("listed") is False:
        lines.append("(this server does not list its requests: start it with --timeout or "
                     "--metrics-bind to see them here)")
    if rows:
        lines += [""] + _table(["WORKER", "PID", "AGE", "METHOD", "PATH"], rows)
    for c in shown:
        if "stack" in c:
            lines += ["", f"worker {c['worker']} pid {c['pid']}: {c['method']} {c['path']} "
                      f"({c['age']:.3f}s)", *c["stack"].rstrip("\n").split("\n")]
    return lines


def render_done(answer: Dict[str, Any]) -> List[str]:
    if answer.get("done") == "workers":
        return [f"workers: {answer['previous']} -> {answer['target']}"]
    return [f"{answer.get('done')}: asked"]


# -- top --------------------------------------------------------------------------------------


def top(path: str, interval: float, out: Any = None) -> int:
    """Redraw status and in-flight requests every `interval` s until `q`, Ctrl-C or EOF."""
    out = out or sys.stdout
    stdin = sys.stdin
    saved = None
    if stdin.isatty():
        import termios
        import tty
        saved = termios.tcgetattr(stdin)
        tty.setcbreak(stdin)
    out.write("\x1b[?1049h\x1b[?25l")  # the alternate screen, no cursor
    try:
        while True:
            try:
                lines = render_status(ask(path, {"command": "status"}))
                lines += [""] + render_requests(ask(path, {"command": "requests"}), TOP_REQUESTS)
            except CtlError as e:
                lines = [f"sluicegate ctl: {e}"]
            head = f"sluicegate top  {path}  {time.strftime('%H:%M:%S')}  (q quits)"
            lines = [printable(line) for line in [head, ""] + lines]
            out.write("\x1b[H\x1b[2J" + "\r\n".join(lines) + "\r\n")
            out.flush()
            readable, _, _ = select.select([stdin], [], [], interval)
            if readable:
                key = os.read(stdin.fileno(), 32)
                if not key or b"q" in key.lower():
                    return 0
    except KeyboardInterrupt:
        return 0
    finally:
        out.write("\x1b[?25h\x1b[?1049l")
        out.flush()
        if saved is not None:
            import termios
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)


# -- the command line ---------------------------------------------------------------------


def _workers_change(text: str) -> int:
    if not re.fullmatch(r"[+-]\d+", text) or int(text) == 0:
        raise argparse.ArgumentTypeError("expected +N or -N, N at least 1 (e.g. +2, -1)")
    refused = protocol.workers_change_refused(int(text))
    if refused:
        raise argparse.ArgumentTypeError(refused)
    return int(text)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (exit status 2), as the server's are."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"sluicegate ctl: {message} (see sluicegate ctl --help)\n")


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print the server's answer as JSON")
    p = _Parser(
        prog="sluicegate ctl", parents=[common],
        description="Talk to a running sluicegate's control socket (docs/operations.md).")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--socket", "-s", metavar="PATH", help="the control socket's path")
    where.add_argument("--pid", type=int, metavar="PID",
                       help="the master's (or single server's) pid: its default socket")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    sub.add_parser("status", parents=[common], help="the master and each worker")
    r = sub.add_parser("requests", parents=[common], help="the requests in flight")
    r.add_argument("--stacks", action="store_true", help="with each one's Python stack")
    sub.add_parser("reload", parents=[common], help="new workers, then the old ones drain (HUP)")
    w = sub.add_parser("workers", parents=[common], help="+N or -N workers (TTIN / TTOU)")
    w.add_argument("change", type=_workers_change, metavar="+N|-N")
    sub.add_parser("reopen-logs", parents=[common], help="reopen the log files (USR1)")
    sub.add_parser("stop", parents=[common], help="finish in-flight requests, exit (TERM)")
    t = sub.add_parser("top", help="status and requests, redrawn until q")
    t.add_argument("--interval", type=float, default=1.0, metavar="S",
                   help="seconds between redraws [default: 1]")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        path = find_socket(args.socket, args.pid)
        if args.command == "top":
            return top(path, max(0.1, args.interval))
        command: Dict[str, Any] = {"command": args.command}
        if args.command == "requests":
            command["stacks"] = args.stacks
        if args.command == "workers":
            command["change"] = args.change
        answer = ask(path, command)
    except CtlError as e:
        print(f"sluicegate ctl: {printable(e)}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):  # JSON escapes every control character itself
        print(json.dumps(answer, indent=2))
        return 0 if answer.get("ok") else 1
    if not answer.get("ok"):
        print(f"sluicegate ctl: {printable(answer.get('error'))}", file=sys.stderr)
        return 1
    render = {"status": render_status, "requests": render_requests}.get(args.command,
                                                                         render_done)
    try:
        lines = render(answer)
    except (KeyError, TypeError, ValueError) as e:
        print(f"sluicegate ctl: {path}: an answer not understood ({printable(e)})",
              file=sys.stderr)
        return 1
    print("\n".join(printable(line) for line in lines))
    return 0
