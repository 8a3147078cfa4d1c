"""PFC on BMv2, approximated by the controller.

BMv2 has no PFC: a pause frame a BMv2 switch receives goes through the P4
program like any frame. fabric.p4 counts it (``pfc_rx_counter``), drops it
and reports it with ``digest<pfc_pause_t>`` (ingress port, class-enable
vector, eight pause times). A :class:`PfcEmulator` per switch receives
these digests over P4Runtime and does what the switch's MAC would, with the
one lever BMv2 offers, the egress queue rate (``set_queue_rate RATE PORT
PRIORITY`` over Thrift, through ``simple_switch_CLI``):

- a frame received on port P with priority n enabled and non-zero quanta
  pauses P's egress queue n (if the port honours PFC on n, as planned by
  :mod:`.fabric_plan`) for ``quanta × 512 / link rate`` seconds from when
  the digest arrives; a new frame restarts the timer (it does not add to
  it); zero quanta resume at once; when the timer runs out the queue gets
  the link rate back (the rate the network layer gave it, see
  :mod:`emulator.network.bmv2`);
- "paused" means the queue's rate is set to the *pause rate*: by default
  the rate whose packet spacing is closest to the pause time (``1 /
  pause``, at least 1 packet/s, at most the link rate), so about one packet
  per pause time leaves; ``pause_rate_pps`` fixes it instead (1 is the
  slowest BMv2 allows);
- pauses (starts), refreshes and paused time are counted per (port,
  priority), as the built-in target does (:meth:`PfcEmulator.stats`).

Commands go to one long-lived ``simple_switch_CLI --thrift-port P`` per
switch, fed on stdin: everything one wake-up decides is written at once,
so a pause costs a Thrift call, not a CLI start (0.2 s to over a second on
a busy machine). The CLI is started, and waited for until it has connected,
when the emulator starts: started at the first pause, it would apply a
short pause after it had already ended.

What differs from the built-in target, which pauses below P4 exactly:

- **Packets already queued still leave.** BMv2 fixes a packet's departure
  time when it is enqueued (``last departure + 1 / rate``). Packets queued
  before the pause starts leave on schedule, at the link rate. Packets
  enqueued during a pause get departure times one pause-rate interval
  apart, and giving the link rate back does not bring them forward: k
  packets enqueued during a pause leave over about k pause times, and what
  is enqueued behind them waits for them. The built-in target holds the
  whole queue and resumes at line rate.
- **The rate floor is 1 packet/s.** Rate 0 means *unlimited* in BMv2, so
  a queue can only be slowed, never stopped: one packet leaks per
  pause-rate interval (with the default pause rate, about one per pause
  time; with ``pause_rate_pps=1``, one per second, which also holds every
  packet enqueued during even a short pause for a second or more).
- **The pause comes late.** It starts when the digest has gone from BMv2's
  learn engine through its P4Runtime server and the gRPC stream to this
  thread and the Thrift call has run: milliseconds, during which the queue
  sends at the link rate; the timer runs on the controller's clock from the
  digest's arrival, so the pause also ends that much later. The digest is
  configured to leave the switch at once (``max_list_size`` 1,
  ``max_timeout_ns`` 0: BMv2 sends an unfull list only on a timeout) and
  without the server's duplicate cache (``ack_timeout_ns`` 0), so refreshes
  with the same contents still arrive. BMv2's learn engine keeps a filter of
  its own: a sample equal to one it sent and PI has not yet acknowledged is
  dropped. PI acknowledges each message as it takes it (a task on its own
  queue), so only a refresh that comes within that round trip is lost.
- **Per priority only with ``--priority-queues``.** The queue rate is per
  priority queue only when the switch runs with ``--priority-queues N``
  (the network layer passes 8); priority n is paused only when n < N
  (otherwise nothing is paused, as on the built-in target).
- **No buffer model.** The built-in target's buffer (shared pool, ingress
  priority groups with headroom, dynamic thresholds, PFC generated below P4
  and released on every way a frame leaves) has no BMv2 counterpart: here
  fabric.p4 generates XOFF/XON from its own per (ingress port, priority)
  byte register (the controller writes ``pfc_ingress``/``pfc_egress`` only
  for BMv2, ``FabricSettings.pfc_in_p4``), BMv2's queues are per port and
  priority and counted in packets, a lossless frame is tail-dropped like
  any other when its queue is full (no headroom), and a frame BMv2's
  traffic manager drops is never released from the register (P4 does not
  see it), so that port may stay paused.
- **Quanta are timed at the configured link rate** (``rate_bps`` of the
  topology), although BMv2 realises that rate only as frames per second of
  one size (``frame_bytes``, the network layer's ``queue_frame_bytes``; the
  link rate given back at the end of a pause is counted the same way).
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, Sequence

from p4.config.v1 import p4info_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from emulator.control.client import P4RuntimeError
from emulator.control.fabric_plan import PAUSE_QUANTUM_BITS, PortQueueConfig
from emulator.network import bmv2

if TYPE_CHECKING:
    from emulator.control.controller import FabricController

PAUSE_DIGEST = "pfc_pause_t"  # p4src/include/headers.p4
PRIORITIES = 8
# An unlimited port (rate 0) times its quanta at this rate, as the built-in
# target does (emulator.targets.builtin.pfc.UNLIMITED_PORT_PFC_RATE_BPS).
UNLIMITED_PORT_PFC_RATE_BPS = 100e9
MIN_RATE_PPS = 1
IDLE_WAIT_S = 0.2

log = logging.getLogger(__name__)


class PfcEmulationError(Exception):
    """The pause digest cannot be enabled on a switch."""

    exit_code = 1


@dataclass(frozen=True)
class PfcPause:
    """One received PFC frame as fabric.p4 reports it."""

    port: int
    class_enable: int
    times: tuple[int, ...]  # pause time per priority, in quanta


def decode_pause(data: p4data_pb2.P4Data) -> PfcPause:
    """A ``pfc_pause_t`` digest member (a struct of ten bitstrings)."""
    values = [int.from_bytes(m.bitstring, "big") for m in data.struct.members]
    if len(values) != 2 + PRIORITIES:
        raise ValueError(f"{PAUSE_DIGEST}: expected {2 + PRIORITIES} members, got {len(values)}")
    return PfcPause(values[0], values[1] & 0xFF, tuple(values[2:]))


def digest_id(p4info: p4info_pb2.P4Info, name: str = PAUSE_DIGEST) -> int:
    for d in p4info.digests:
        if d.preamble.name == name:
            return d.preamble.id
    raise PfcEmulationError(f"the P4Info has no digest {name!r} (is fabric.p4 up to date?)")


def link_rate_pps(rate_bps: int, frame_bytes: int = bmv2.FULL_FRAME_BYTES) -> int:
    """The queue rate the network layer gives a port (0: unlimited), as
    :func:`emulator.network.bmv2.queue_commands` computes it."""
    if rate_bps <= 0:
        return 0
    return max(1, round(rate_bps / (8 * frame_bytes)))


def pause_seconds(quanta: int, rate_bps: int) -> float:
    return quanta * PAUSE_QUANTUM_BITS / (rate_bps if rate_bps > 0 else UNLIMITED_PORT_PFC_RATE_BPS)


def pause_rate_pps(pause_s: float, link_pps: int, fixed_pps: int | None = None) -> int:
    """The rate a paused queue gets: ``fixed_pps``, else the one whose packet
    spacing is closest to the pause time; never below 1 packet/s (0 would be
    unlimited), never above the link rate."""
    if fixed_pps is not None:
        rate = max(MIN_RATE_PPS, fixed_pps)
    else:
        rate = max(MIN_RATE_PPS, round(1.0 / pause_s)) if pause_s > 0 else MIN_RATE_PPS
    if link_pps > 0:
        rate = min(rate, link_pps)
    return rate


def rate_command(rate_pps: int, port: int, priority: int) -> str:
    return f"set_queue_rate {rate_pps} {port} {priority}"


# ---- the CLI ----------------------------------------------------------------------------
class CommandSink(Protocol):
    def open(self) -> None: ...

    def send(self, commands: Sequence[str]) -> None: ...

    def close(self) -> None: ...


# What simple_switch_CLI prints once it has connected and read the switch's
# JSON, just before its first prompt.
CLI_READY_MARK = "Control utility for runtime P4 table manipulation"


class ThriftCli:
    """One long-lived ``simple_switch_CLI --thrift-port P`` fed commands on
    stdin; started by :meth:`open` (or the first commands), restarted if it
    has exited. Lines of its output that contain ``Error`` are kept in
    :attr:`errors`."""

    def __init__(self, switch: str, thrift_port: int, binary: str | None = None) -> None:
        self.switch = switch
        self.thrift_port = thrift_port
        self.binary = binary
        self.proc: subprocess.Popen[str] | None = None
        self.errors: collections.deque[str] = collections.deque(maxlen=100)
        self.last_lines: collections.deque[str] = collections.deque(maxlen=3)
        self.restarts = 0
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()

    def open(self, timeout_s: float = bmv2.CLI_TIMEOUT_S) -> None:
        """Start the CLI and wait until it has connected to the switch."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                said = " ".join(self.last_lines) or "it printed nothing"
                raise PfcEmulationError(
                    f"{self.switch}: simple_switch_CLI --thrift-port {self.thrift_port} did not "
                    f"connect within {timeout_s:g} s ({said})")

    def _start(self) -> subprocess.Popen[str]:
        binary = self.binary or bmv2.require_tool(bmv2.CLI_BINARY)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._ready = threading.Event()
        proc = subprocess.Popen([binary, "--thrift-port", str(self.thrift_port)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1, env=env)
        self._reader = threading.Thread(target=self._read, args=(proc, self._ready), daemon=True,
                                        name=f"pfc-cli-{self.switch}")
        self._reader.start()
        return proc

    def _read(self, proc: subprocess.Popen[str], ready: threading.Event) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if CLI_READY_MARK in line:
                ready.set()
            if line.strip():
                self.last_lines.append(line.strip())
            if "Error" in line or "Traceback" in line:
                self.errors.append(line.strip())
                log.warning("%s: simple_switch_CLI: %s", self.switch, line.strip())

    def send(self, commands: Sequence[str]) -> None:
        if not commands:
            return
        text = "".join(c + "\n" for c in commands)
        for attempt in (0, 1):
            if self.proc is None or self.proc.poll() is not None:
                if self.proc is not None:
                    self.restarts += 1
                self.proc = self._start()
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(text)
                self.proc.stdin.flush()
                return
            except (BrokenPipeError, OSError):
                self.proc.wait(timeout=bmv2.CLI_TIMEOUT_S)
                if attempt:
                    raise

    def close(self, timeout_s: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=1)


# ---- the emulator -----------------------------------------------------------------------
@dataclass
class _QueueState:
    link_pps: int
    rate_pps: int  # what the queue runs at now
    until: float | None = None  # end of the pause in force (None: not paused)
    since: float = 0.0
    pauses: int = 0
    refreshes: int = 0
    resumes: int = 0
    paused_s: float = 0.0


class DigestSource(Protocol):
    """What the emulator needs of a :class:`~.client.SwitchClient`."""

    name: str
    digests: "queue.Queue[p4runtime_pb2.DigestList]"

    def write(self, updates: Iterable[p4runtime_pb2.Update]) -> int: ...


class PfcEmulator:
    """Honours the PFC frames one BMv2 switch receives; see the module
    docstring. ``ports`` are the switch's planned ports (link rate, which
    priorities honour PFC); ``priority_queues`` is the switch's
    ``--priority-queues``. :meth:`start` runs it on a thread; tests drive
    :meth:`step` with their own ``clock``."""

    def __init__(self, client: DigestSource, p4info: p4info_pb2.P4Info, thrift_port: int,
                 ports: Sequence[PortQueueConfig], *, priority_queues: int = PRIORITIES,
                 pause_rate_pps: int | None = None, cli: CommandSink | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 frame_bytes: int = bmv2.FULL_FRAME_BYTES) -> None:
        self.client = client
        self.switch = client.name
        self.digest_id = digest_id(p4info)
        self.thrift_port = thrift_port
        self.priority_queues = priority_queues
        self.fixed_pause_pps = pause_rate_pps
        self.cli: CommandSink = cli if cli is not None else ThriftCli(client.name, thrift_port)
        self.clock = clock
        self.rate_bps = {p.port: p.rate_bps for p in ports}
        self.frame_bytes = frame_bytes  # the network layer's queue_frame_bytes
        self.honoured = {p.port: frozenset(p.pfc_priorities) for p in ports}
        self._queues: dict[tuple[int, int], _QueueState] = {}
        self.frames = 0  # pause frames (digest messages) received
        self.ignored = 0  # enabled classes not acted on (PFC off there, no such queue or port)
        self.cli_errors = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- set-up -----------------------------------------------------------------------
    def enable_digest(self) -> None:
        """Configure ``pfc_pause_t`` digests to be sent one by one at once,
        with no duplicate suppression (INSERT, or MODIFY if configured)."""
        for kind in (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY):
            update = p4runtime_pb2.Update(type=kind)
            entry = update.entity.digest_entry
            entry.digest_id = self.digest_id
            entry.config.max_timeout_ns = 0
            entry.config.max_list_size = 1
            entry.config.ack_timeout_ns = 0
            try:
                self.client.write([update])
                return
            except P4RuntimeError as exc:
                codes = {exc.code} | {code for _, code, _ in exc.details}
                if kind == p4runtime_pb2.Update.MODIFY or "ALREADY_EXISTS" not in codes:
                    raise

    def start(self) -> "PfcEmulator":
        self.enable_digest()
        self.cli.open()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"pfc-{self.switch}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread, give every paused queue its link rate back and
        end the CLI."""
        self._stop.set()
        self.client.digests.put(None)  # type: ignore[arg-type]  # wakes the thread
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            commands = self.resume_all(self.clock())
            if commands:
                self.cli.send(commands)
        except Exception as exc:  # the switch may be gone already
            log.debug("%s: resuming queues at stop: %s", self.switch, exc)
        self.cli.close()

    # ---- the loop ---------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            deadline = self.next_deadline()
            wait = IDLE_WAIT_S if deadline is None else min(max(deadline - self.clock(), 0.0),
                                                            IDLE_WAIT_S)
            try:
                self.step(wait)
            except Exception:  # keep honouring pauses after a CLI hiccup
                log.exception("%s: PFC emulation step failed", self.switch)
                self.cli_errors += 1
                time.sleep(0.05)

    def step(self, wait_s: float = 0.0) -> list[str]:
        """Wait up to ``wait_s`` for digests, take every one queued, act on
        them and on expired pauses; returns the commands sent (one batch)."""
        lists: list[p4runtime_pb2.DigestList] = []
        try:
            first = self.client.digests.get(timeout=wait_s) if wait_s > 0 \
                else self.client.digests.get_nowait()
            lists.append(first)
            while True:
                lists.append(self.client.digests.get_nowait())
        except queue.Empty:
            pass
        now = self.clock()
        commands: list[str] = []
        for digest_list in lists:
            if digest_list is None or digest_list.digest_id != self.digest_id:
                continue
            for data in digest_list.data:
                try:
                    pause = decode_pause(data)
                except ValueError as exc:
                    log.warning("%s: %s", self.switch, exc)
                    continue
                commands += self.on_pause(pause, now)
        commands += self.expire(now)
        if commands:
            self.cli.send(commands)
        return commands

    # ---- the logic (no I/O; ``now`` from the caller) --------------------------------------
    def _queue(self, port: int, prio: int) -> _QueueState:
        state = self._queues.get((port, prio))
        if state is None:
            link = link_rate_pps(self.rate_bps[port], self.frame_bytes)
            state = self._queues[(port, prio)] = _QueueState(link, link)
        return state

    def _set_rate(self, state: _QueueState, port: int, prio: int, rate: int) -> list[str]:
        if rate == state.rate_pps:
            return []
        state.rate_pps = rate
        return [rate_command(rate, port, prio)]

    def on_pause(self, pause: PfcPause, now: float) -> list[str]:
        """Act on one received PFC frame; returns the CLI commands."""
        commands: list[str] = []
        with self._lock:
            self.frames += 1
            for prio in range(PRIORITIES):
                if not pause.class_enable >> prio & 1:
                    continue
                if (pause.port not in self.rate_bps or prio not in self.honoured[pause.port]
                        or prio >= self.priority_queues):
                    self.ignored += 1
                    continue
                state = self._queue(pause.port, prio)
                quanta = pause.times[prio]
                if quanta == 0:
                    commands += self._resume(state, pause.port, prio, now)
                    continue
                pause_s = pause_seconds(quanta, self.rate_bps[pause.port])
                if state.until is None:
                    state.pauses += 1
                    state.since = now
                else:
                    state.refreshes += 1
                state.until = now + pause_s
                rate = pause_rate_pps(pause_s, state.link_pps, self.fixed_pause_pps)
                commands += self._set_rate(state, pause.port, prio, rate)
        return commands

    def _resume(self, state: _QueueState, port: int, prio: int, now: float) -> list[str]:
        if state.until is None:
            return []
        state.paused_s += max(0.0, min(now, state.until) - state.since)
        state.until = None
        state.resumes += 1
        return self._set_rate(state, port, prio, state.link_pps)

    def expire(self, now: float) -> list[str]:
        """Resume the queues whose pause has run out by ``now``."""
        commands: list[str] = []
        with self._lock:
            for (port, prio), state in sorted(self._queues.items()):
                if state.until is not None and state.until <= now:
                    commands += self._resume(state, port, prio, now)
        return commands

    def resume_all(self, now: float) -> list[str]:
        commands: list[str] = []
        with self._lock:
            for (port, prio), state in sorted(self._queues.items()):
                commands += self._resume(state, port, prio, now)
        return commands

    def next_deadline(self) -> float | None:
        with self._lock:
            ends = [s.until for s in self._queues.values() if s.until is not None]
        return min(ends) if ends else None

    def stats(self, now: float | None = None) -> dict[str, object]:
        """Frames received and, per "port/priority" ever paused: pauses
        (starts), refreshes, resumes, paused seconds (the running part of a
        pause included), whether paused now and the queue's current rate."""
        now = self.clock() if now is None else now
        with self._lock:
            queues: dict[str, dict[str, object]] = {}
            for (port, prio), s in sorted(self._queues.items()):
                running = max(0.0, min(now, s.until) - s.since) if s.until is not None else 0.0
                queues[f"{port}/{prio}"] = {
                    "pauses": s.pauses, "refreshes": s.refreshes, "resumes": s.resumes,
                    "paused_s": round(s.paused_s + running, 6), "paused": s.until is not None,
                    "rate_pps": s.rate_pps, "link_pps": s.link_pps}
            return {"switch": self.switch, "frames": self.frames, "ignored": self.ignored,
                    "cli_errors": self.cli_errors + len(getattr(self.cli, "errors", ())),
                    "queues": queues}

    def port_stats(self, now: float | None = None) -> dict[str, object]:
        """Paused seconds per port and priority in the shape of the built-in
        target's ``GetPortStats`` (``ports``: ``port``, ``queues``:
        ``priority``, ``paused_s``), so that a run's results count BMv2's
        pauses as they count the built-in target's."""
        ports: dict[int, list[dict[str, object]]] = {}
        for key, q in self.stats(now)["queues"].items():  # type: ignore[attr-defined]
            port, prio = (int(x) for x in key.split("/"))
            ports.setdefault(port, []).append({"priority": prio, "paused_s": q["paused_s"]})
        return {"ports": [{"port": port, "queues": queues}
                          for port, queues in sorted(ports.items())]}


def start_emulators(controller: "FabricController", thrift_ports: dict[str, int],
                    priority_queues: dict[str, int] | None = None,
                    pause_rate_pps: int | None = None,
                    frame_bytes: int = bmv2.FULL_FRAME_BYTES) -> dict[str, PfcEmulator]:
    """One started :class:`PfcEmulator` per switch of a programmed
    :class:`~.controller.FabricController` whose plan honours PFC somewhere."""
    emulators: dict[str, PfcEmulator] = {}
    try:
        for name, plan in controller.plans.items():
            if not any(p.pfc_priorities for p in plan.ports):
                continue
            emulators[name] = PfcEmulator(
                controller.clients[name], controller.p4info, thrift_ports[name], plan.ports,
                priority_queues=(priority_queues or {}).get(name, PRIORITIES),
                pause_rate_pps=pause_rate_pps, frame_bytes=frame_bytes).start()
    except BaseException:
        stop_emulators(emulators)
        raise
    return emulators


def stop_emulators(emulators: dict[str, PfcEmulator]) -> None:
    for emulator in emulators.values():
        emulator.stop()
    emulators.clear()
