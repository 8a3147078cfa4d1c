"""The machine's CPU use while a live run's traffic runs, from ``/proc/stat``.

:class:`CpuSampler` reads the aggregate ``cpu`` line every ``interval_s``
on a daemon thread: busy = 1 − (idle + iowait) / total over each interval,
as a fraction of all cores (1.0 = every core busy). Other processes on the
machine count too: that is the point, a run shares the CPU with whatever
else runs. ``steal`` counts as busy (a core the hypervisor gave away is
not ours), and is also reported on its own: ``cpu_steal``, the share of
all CPU time the hypervisor took (a VM's host running other guests), which
stalls every process at once and which no time scale cures. Where
``/proc/stat`` cannot be read, the sampler records nothing and
:meth:`~CpuSampler.result` has ``None`` figures.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

DEFAULT_INTERVAL_S = 0.25


def read_cpu_times(path: str = "/proc/stat") -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores so far; None when unreadable."""
    counters = read_cpu_counters(path)
    return None if counters is None else (counters[0], counters[1])


def read_cpu_counters(path: str = "/proc/stat") -> tuple[int, int, int] | None:
    """(busy, total, steal) jiffies of all cores so far; None when unreadable."""
    try:
        with open(path) as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values[:8])  # guest times are already in user and nice
    steal = values[7] if len(values) > 7 else 0
    return total - idle, total, steal


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class CpuSampler:
    """Samples the machine's CPU use from :meth:`start` to :meth:`stop`."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, path: str = "/proc/stat") -> None:
        self.interval_s = interval_s
        self.path = path
        self.samples: list[tuple[float, float]] = []   # (unix time at the end, busy)
        self.steal_samples: list[tuple[float, float]] = []  # (unix time at the end, steal)
        self._first: tuple[int, int, int] | None = None
        self._last: tuple[int, int, int] | None = None
        self._last_at = 0.0   # monotonic time of _last
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "CpuSampler":
        self._first = self._last = read_cpu_counters(self.path)
        self._last_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="aifabric-cpu", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self, final: bool = False) -> None:
        now = read_cpu_counters(self.path)
        if now is None or self._last is None:
            return
        busy, total = now[0] - self._last[0], now[1] - self._last[1]
        at = time.monotonic()
        # The last stretch (stop() just after a sample) can be a jiffy or
        # two, whose share is noise (0 or 1): it counts in the mean, not as
        # a sample of its own.
        short = final and bool(self.samples) and at - self._last_at < self.interval_s / 2
        if total > 0 and not short:
            t = time.time()
            self.samples.append((t, busy / total))
            self.steal_samples.append((t, (now[2] - self._last[2]) / total))
        self._last = now
        self._last_at = at

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2 * self.interval_s + 1.0)
        self._sample(final=True)

    def result(self, since_unix: float | None = None) -> dict[str, Any]:
        """``cpu_busy`` (mean over the sampled time, or over the samples
        ending after ``since_unix``), ``cpu_busy_max`` (the busiest
        interval), ``cpu_steal`` and ``cpu_steal_max`` (the same for the
        time the hypervisor took), ``cores`` and the samples as
        ``[unix, busy]``."""
        samples = [s for s in self.samples if since_unix is None or s[0] > since_unix]
        steals = [s for s in self.steal_samples if since_unix is None or s[0] > since_unix]
        if since_unix is None and self._first is not None and self._last is not None:
            total = self._last[1] - self._first[1]
            mean = (self._last[0] - self._first[0]) / total if total > 0 else None
            steal = (self._last[2] - self._first[2]) / total if total > 0 else None
        else:
            mean = sum(b for _, b in samples) / len(samples) if samples else None
            steal = sum(b for _, b in steals) / len(steals) if steals else None
        return {"cpu_busy": None if mean is None else round(mean, 3),
                "cpu_busy_max": round(max(b for _, b in samples), 3) if samples else None,
                "cpu_steal": None if steal is None else round(steal, 4),
                "cpu_steal_max": round(max(b for _, b in steals), 4) if steals else None,
                "cores": cores(),
                "samples": [[round(t, 3), round(b, 3)] for t, b in samples]}
