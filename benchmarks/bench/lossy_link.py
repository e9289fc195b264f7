"""An emulated lossy link between two network namespaces this process creates (S17c).

Two namespaces, `sgh3-srv-PID` (the server, 192.0.2.1) and `sgh3-cli-PID` (the client,
192.0.2.2): addresses of TEST-NET-1 (RFC 5737) that exist only inside those two namespaces,
so nothing of the test leaves them. The link between them is one of:

- `netem`: a veth pair with `tc qdisc add dev VETH root netem loss L% delay Dms [limit 1000]`
  on the server's end (its answers carry the loss and the delay), and on the client's end
  too with `both_ways`;
- `tun`: where the kernel has no netem (`tc` says "Specified qdisc kind is unknown": a kernel
  built without CONFIG_NET_SCH_NETEM, which cannot load modules), a TUN device in each
  namespace and a forwarder thread here that does netem's work in user space: each IP packet
  from the server is dropped with probability L% or delivered D ms later, in order, with
  netem's default queue limit of 1,000 packets (tail drop past it), and the client's packets
  likewise with `both_ways`, otherwise at once. It costs CPU on the same machine (about
  10 µs of Python per packet).

`Link.setup()` builds it (mode "auto": netem if the kernel has it, else tun) and
`Link.teardown()` deletes both namespaces (which removes their devices) and stops the
forwarder. Everything it ran is in `Link.log`.
"""

from __future__ import annotations

import collections
import fcntl
import os
import random
import select
import struct
import subprocess
import threading
import time

SRV_ADDR, CLI_ADDR = "192.0.2.1", "192.0.2.2"
TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
QUEUE_LIMIT = 1000  # netem's default `limit`


class LinkError(RuntimeError):
    pass


def sh(cmd: list[str], log: list[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    log.append(f"$ {' '.join(cmd)}" + (f"   -> exit {r.returncode}: {r.stderr.strip()}" if r.returncode else ""))
    if check and r.returncode:
        raise LinkError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def tun_open(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


class Forwarder(threading.Thread):
    """netem in user space between two TUN fds: loss and delay per direction, FIFO order."""

    def __init__(self, fd_srv: int, fd_cli: int, loss: float, delay_s: float, both_ways: bool, seed: int):
        super().__init__(daemon=True, name="lossy-link")
        self.fds = (fd_srv, fd_cli)
        # direction 0: server -> client; 1: client -> server
        self.shape = [(loss, delay_s), (loss, delay_s) if both_ways else (0.0, 0.0)]
        self.queues = [collections.deque(), collections.deque()]
        self.rng = random.Random(seed)
        self.stop_ev = threading.Event()
        self.counts = {"srv->cli": [0, 0, 0, 0], "cli->srv": [0, 0, 0, 0]}  # delivered, lost, queue-full, write failed

    def _read(self, d: int) -> None:
        loss, delay = self.shape[d]
        q, c = self.queues[d], self.counts["srv->cli" if d == 0 else "cli->srv"]
        for _ in range(512):
            try:
                pkt = os.read(self.fds[d], 65536)
            except BlockingIOError:
                return
            if loss and self.rng.random() < loss:
                c[1] += 1
            elif len(q) >= QUEUE_LIMIT:
                c[2] += 1
            else:
                q.append((time.monotonic() + delay, pkt))

    def _flush(self, now: float) -> None:
        for d, q in enumerate(self.queues):
            c = self.counts["srv->cli" if d == 0 else "cli->srv"]
            while q and q[0][0] <= now:
                _, pkt = q.popleft()
                try:
                    os.write(self.fds[1 - d], pkt)
                    c[0] += 1
                except OSError:
                    c[3] += 1

    def run(self) -> None:
        ep = select.epoll()
        for d, fd in enumerate(self.fds):
            ep.register(fd, select.EPOLLIN)
        which = {fd: d for d, fd in enumerate(self.fds)}
        while not self.stop_ev.is_set():
            now = time.monotonic()
            due = [q[0][0] for q in self.queues if q]
            timeout = min(max(min(due) - now, 0.0), 0.05) if due else 0.05
            for fd, _ in ep.poll(timeout):
                self._read(which[fd])
            self._flush(time.monotonic())
        ep.close()


class Link:
    def __init__(self, mode: str = "auto", loss_pct: float = 1.0, delay_ms: float = 20.0,
                 both_ways: bool = False, seed: int = 1):
        self.mode, self.loss_pct, self.delay_ms, self.both_ways, self.seed = mode, loss_pct, delay_ms, both_ways, seed
        tag = os.getpid()
        self.srv_ns, self.cli_ns = f"sgh3-srv-{tag}", f"sgh3-cli-{tag}"
        self.srv_dev, self.cli_dev = f"sgh3s{tag % 100000}", f"sgh3c{tag % 100000}"
        self.log: list[str] = []
        self.used = ""
        self.netem_error = ""
        self.forwarder: Forwarder | None = None
        self.fds: list[int] = []

    def netem_args(self) -> list[str]:
        return ["netem", "loss", f"{self.loss_pct:g}%", "delay", f"{self.delay_ms:g}ms", "limit", str(QUEUE_LIMIT)]

    def setup(self) -> str:
        """Create the namespaces and the link; returns a one-line description of it."""
        for ns in (self.srv_ns, self.cli_ns):
            sh(["ip", "netns", "add", ns], self.log)
            sh(["ip", "-n", ns, "link", "set", "lo", "up"], self.log)
        if self.mode in ("auto", "netem"):
            try:
                return self._veth_netem()
            except LinkError as e:
                self.netem_error = str(e)
                sh(["ip", "-n", self.srv_ns, "link", "del", self.srv_dev], self.log, check=False)
                if self.mode == "netem":
                    raise
        return self._tun()

    def _veth_netem(self) -> str:
        sh(["ip", "link", "add", self.srv_dev, "netns", self.srv_ns, "type", "veth",
            "peer", "name", self.cli_dev, "netns", self.cli_ns], self.log)
        for ns, dev, addr in ((self.srv_ns, self.srv_dev, SRV_ADDR), (self.cli_ns, self.cli_dev, CLI_ADDR)):
            sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev], self.log)
            sh(["ip", "-n", ns, "link", "set", dev, "up"], self.log)
        sh(["tc", "-n", self.srv_ns, "qdisc", "add", "dev", self.srv_dev, "root", *self.netem_args()], self.log)
        if self.both_ways:
            sh(["tc", "-n", self.cli_ns, "qdisc", "add", "dev", self.cli_dev, "root", *self.netem_args()], self.log)
        self.used = "netem"
        return f"veth pair, tc {' '.join(self.netem_args())} on the server's end" + \
            (" and the client's" if self.both_ways else "")

    def _tun(self) -> str:
        for ns, dev, addr, peer in ((self.srv_ns, self.srv_dev, SRV_ADDR, CLI_ADDR),
                                    (self.cli_ns, self.cli_dev, CLI_ADDR, SRV_ADDR)):
            self.fds.append(tun_open(dev))
            self.log.append(f"(TUNSETIFF {dev}: IFF_TUN | IFF_NO_PI)")
            sh(["ip", "link", "set", dev, "netns", ns], self.log)
            sh(["ip", "-n", ns, "addr", "add", addr, "peer", peer, "dev", dev], self.log)
            sh(["ip", "-n", ns, "link", "set", dev, "up", "mtu", "1500"], self.log)
        self.forwarder = Forwarder(self.fds[0], self.fds[1], self.loss_pct / 100, self.delay_ms / 1000,
                                   self.both_ways, self.seed)
        self.forwarder.start()
        self.used = "tun"
        return (f"TUN devices and a user-space forwarder doing netem's work: loss {self.loss_pct:g}%, "
                f"delay {self.delay_ms:g} ms, limit {QUEUE_LIMIT} on the server's packets"
                + (" and the client's" if self.both_ways else " (the client's pass at once)"))

    def snapshot(self) -> dict[str, list[int]]:
        """The user-space link's counts so far (empty for netem)."""
        return {k: list(v) for k, v in self.forwarder.counts.items()} if self.forwarder else {}

    @staticmethod
    def describe(before: dict[str, list[int]], after: dict[str, list[int]]) -> str:
        """What the user-space link did between two snapshots, in words."""
        parts = []
        for k, v in after.items():
            d = [a - b for a, b in zip(v, before.get(k, [0, 0, 0, 0]))]
            parts.append(f"{k}: {d[0]} delivered, {d[1]} lost, {d[2]} over the queue limit, {d[3]} not written")
        return "; ".join(parts)

    def counters(self) -> str:
        """What the link did so far: packets delivered/lost per direction."""
        if self.forwarder:
            return "; ".join(f"{k}: {v[0]} delivered, {v[1]} lost, {v[2]} over the queue limit, "
                             f"{v[3]} not written" for k, v in self.forwarder.counts.items())
        if self.used == "netem":
            r = sh(["tc", "-s", "-n", self.srv_ns, "qdisc", "show", "dev", self.srv_dev], [], check=False)
            return " ".join(r.stdout.split())
        return ""

    def teardown(self) -> None:
        if self.forwarder:
            self.forwarder.stop_ev.set()
            self.forwarder.join(timeout=5)
        for fd in self.fds:
            os.close(fd)
        for ns in (self.srv_ns, self.cli_ns):
            sh(["ip", "netns", "del", ns], self.log, check=False)
