"""The publisher a run calls, and the state the web server reads.

A run (live or sim, :mod:`emulator.run.live`,
:mod:`emulator.run.sim`) or ``aifabric up`` calls a
:class:`ViewFeed` as its :class:`RunObserver`:

- ``on_start(scenario, qps, target=..., poll=...)`` once the fabric is up;
- ``on_sample(t_s, snapshot)`` every sampling period (see :mod:`.frames`);
- ``on_end(results=None, error=None)`` when it is over, or died.

None of these blocks the caller (the one exception: a sim run asked to
play at a given speed, :meth:`ViewFeed.pace`). Samples go into a bounded
deque that drops the oldest when full (``dropped`` counts them); one worker
thread takes them out, calls ``poll()`` where the run gave one (a live run:
the switches' statistics over their control channel, read here rather than
in the run's loop) and turns them into frames (:class:`~.frames.Deriver`)
appended to the :class:`RunState`. The HTTP server (its own thread) reads
the state: the frames since a sequence number, the totals for ``/metrics``,
the summary once it ended.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable, Mapping, Protocol, Sequence

from emulator.view.frames import Deriver, QpEnds, Totals
from emulator.view.picture import Picture, build_picture

MAX_PENDING_SAMPLES = 256
MAX_FRAMES = 20_000
# A sim run samples every series bin of simulated time, but publishes at most
# one sample per this much wall time (see .sources.sim_sampler).
SIM_MIN_WALL_S = 0.05


class RunObserver(Protocol):
    """What a run calls (module docstring)."""

    def on_start(self, scenario: Any, qps: Sequence[Any], *, target: str,
                 poll: Callable[[], Mapping[str, Any]] | None = None) -> None: ...

    def on_sample(self, t_s: float, snapshot: Mapping[str, Any]) -> None: ...

    def on_end(self, results: Mapping[str, Any] | None = None,
               error: str | None = None) -> None: ...


class RunState:
    """One run as the server shows it: what it is, its frames, its totals,
    how it ended. Written by one thread (the feed's worker, or the replay
    loader), read by the server's; ``version`` moves on every change."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.info: dict[str, Any] = {"label": label, "state": "waiting"}
        self.picture: Picture | None = None
        self.frames: list[dict[str, Any]] = []
        self.first_seq = 0            # the sequence number of frames[0]
        self.totals = Totals()
        self.ended: dict[str, Any] | None = None
        self.version = 0
        self.lock = threading.RLock()

    @property
    def next_seq(self) -> int:
        return self.first_seq + len(self.frames)

    def start(self, picture: Picture, info: Mapping[str, Any]) -> None:
        with self.lock:
            self.picture = picture
            self.info = {"label": self.label, **info, "state": "running",
                         "topology": picture.elements}
            self.version += 1

    def append(self, frame: dict[str, Any]) -> None:
        with self.lock:
            frame["seq"] = self.next_seq
            self.frames.append(frame)
            if len(self.frames) > MAX_FRAMES:
                drop = len(self.frames) - MAX_FRAMES
                del self.frames[:drop]
                self.first_seq += drop
            self.version += 1

    def finish(self, summary: Mapping[str, Any]) -> None:
        with self.lock:
            self.ended = dict(summary)
            self.info["state"] = "ended"
            self.version += 1

    def since(self, seq: int) -> list[dict[str, Any]]:
        """The frames with a sequence number >= ``seq`` (all there are, if older)."""
        with self.lock:
            return self.frames[max(seq - self.first_seq, 0):]

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"info": self.info, "ended": self.ended, "next_seq": self.next_seq}


def run_summary(results: Mapping[str, Any]) -> dict[str, Any]:
    """What the page shows when a run ends: a few blocks of its results."""
    flows = [{k: f.get(k) for k in ("id", "src", "dst", "size_bytes", "completed", "fct_s",
                                     "goodput_bps", "fct_dc_s", "goodput_dc_bps")}
             for f in results.get("flows", [])]
    fidelity = results.get("fidelity") or {}
    return {"partial": bool(results.get("partial")), "target": results.get("target"),
            "totals": results.get("totals") or {}, "flows": flows,
            "checks": results.get("checks") or [], "errors": results.get("errors") or [],
            "fidelity": {k: fidelity.get(k) for k in ("faithful", "clock", "reasons", "rule")},
            "sim": results.get("sim") or {}, "time_scale": results.get("time_scale", 1)}


def final_counters(totals: Totals, results: Mapping[str, Any]) -> None:
    """The ECN marks of every switch queue, from the run's results (P4
    counters, read once at the end: see :mod:`.sources`)."""
    for switch, ports in (results.get("switches") or {}).items():
        for port, prios in ports.items():
            if not isinstance(prios, dict) or not str(port).isdigit():
                continue
            for prio, q in prios.items():
                if isinstance(q, dict) and q.get("ecn_marked") is not None:
                    slot = totals.queues.setdefault((switch, int(port), int(prio)), {})
                    slot["ecn_marked"] = q["ecn_marked"]


def scenario_info(scenario: Any, target: str) -> dict[str, Any]:
    live = target != "sim"
    scale = float(getattr(scenario, "time_scale", 1) or 1) if live else 1.0
    return {"name": scenario.name, "description": getattr(scenario, "description", ""),
            "target": target, "duration_s": scenario.duration_s, "time_scale": scale,
            "clock": "emulated" if live else "simulated",
            "clock_text": (f"emulated seconds (data-centre time = emulated / {scale:g})"
                           if live and scale != 1 else
                           "emulated seconds" if live else "simulated seconds")}


class ViewFeed:
    """A :class:`RunObserver` that fills a :class:`RunState` (module docstring)."""

    def __init__(self, state: RunState, *, max_pending: int = MAX_PENDING_SAMPLES,
                 speed: float | None = None, min_wall_s: float = SIM_MIN_WALL_S) -> None:
        self.state = state
        self.speed = speed            # simulated s per wall s (sim only); None: flat out
        self.min_wall_s = min_wall_s  # sim: wall time between samples, at least
        self.duration_s = 0.0
        self.dropped = 0
        self.frame_cost_s = 0.0       # CPU time the last frame took (see .sources)
        self._samples: deque[tuple[float, Mapping[str, Any]]] = deque()
        self._max_pending = max_pending
        self._start: tuple[Picture, dict[str, Any], list[QpEnds], int] | None = None
        self._poll: Callable[[], Mapping[str, Any]] | None = None
        self._end: dict[str, Any] | None = None
        self._results: Mapping[str, Any] | None = None
        self._wake = threading.Event()
        self._closed = False
        self._deriver: Deriver | None = None
        self._pace_origin: float | None = None
        self._ticker: threading.Thread | None = None
        self._worker = threading.Thread(target=self._run, name="aifabric-view-feed",
                                        daemon=True)
        self._worker.start()

    # -- the observer ------------------------------------------------------------------
    def on_start(self, scenario: Any, qps: Sequence[Any], *, target: str,
                 poll: Callable[[], Mapping[str, Any]] | None = None) -> None:
        ends = [QpEnds(q.flow, q.qpn, q.src_server, q.dst_server, getattr(q, "dst_qpn", 0))
                for q in qps]
        sized = sum(getattr(q, "size_bytes", 0) or 0 for q in qps)
        self.duration_s = scenario.duration_s
        self._begin(build_picture(scenario.topology), scenario_info(scenario, target),
                    ends, sized, poll)

    def watch_fabric(self, topology: Any, target: str,
                     poll: Callable[[], Mapping[str, Any]], every_s: float = 1.0) -> None:
        """``aifabric up``: no scenario; poll the switches every ``every_s``."""
        info = {"name": topology.name, "description": "a fabric brought up by aifabric up",
                "target": target, "duration_s": None, "time_scale": 1.0, "clock": "wall",
                "clock_text": "seconds since the view started"}
        self._begin(build_picture(topology), info, [], 0, poll)
        origin = time.monotonic()

        def tick() -> None:
            while not self._closed:
                self.on_sample(time.monotonic() - origin, {})
                time.sleep(every_s)
        self._ticker = threading.Thread(target=tick, name="aifabric-view-tick", daemon=True)
        self._ticker.start()

    def _begin(self, picture: Picture, info: dict[str, Any], ends: list[QpEnds], sized: int,
               poll: Callable[[], Mapping[str, Any]] | None) -> None:
        self._start = (picture, info, ends, sized)
        self._poll = poll
        self._wake.set()

    def on_sample(self, t_s: float, snapshot: Mapping[str, Any]) -> None:
        if len(self._samples) >= self._max_pending:
            self._samples.popleft()   # drop-oldest: a slow reader never holds a run back
            self.dropped += 1
        self._samples.append((t_s, snapshot))
        self._wake.set()

    def on_end(self, results: Mapping[str, Any] | None = None,
               error: str | None = None) -> None:
        summary = run_summary(results) if results is not None else {}
        if error:
            summary["error"] = error
        self._results = results
        self._end = summary
        self._wake.set()

    def pace(self, t_s: float) -> bool:
        """Hold a sim run so that it plays at ``speed`` simulated seconds per wall
        second; True when it was ahead of that speed (and so was held)."""
        if not self.speed:
            return False
        now = time.monotonic()
        if self._pace_origin is None:
            self._pace_origin = now - t_s / self.speed
        ahead = self._pace_origin + t_s / self.speed - now
        if ahead > 0:
            time.sleep(ahead)
        return ahead > 0

    # -- the worker --------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            self._wake.wait(0.5)
            self._wake.clear()
            if self._start is not None:
                picture, info, ends, sized = self._start
                self._start = None
                self._deriver = Deriver(picture, ends, info.get("duration_s") or 0.0, sized)
                self.state.totals = self._deriver.totals
                self.state.start(picture, info)
            while self._samples and self._deriver is not None:
                t_s, snapshot = self._samples.popleft()
                self._sample(t_s, snapshot)
            if self._end is not None and not self._samples:
                end, self._end = self._end, None
                if self._results is not None:
                    with self.state.lock:
                        final_counters(self.state.totals, self._results)
                self.state.finish(end)
            if self._closed and not self._samples:
                return

    def _sample(self, t_s: float, snapshot: Mapping[str, Any]) -> None:
        assert self._deriver is not None
        began = time.thread_time()
        if self._poll is not None:
            try:
                snapshot = {**snapshot, **self._poll()}
            except Exception as exc:  # a switch gone: the run will say so; keep going
                self.state.info["poll_error"] = str(exc)
        with self.state.lock:  # /metrics reads the totals this updates
            frame = self._deriver.add(t_s, snapshot)
            self.state.append(frame)
        self.frame_cost_s = time.thread_time() - began

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the worker once what is queued is done."""
        self._closed = True
        self._wake.set()
        self._worker.join(timeout_s)
