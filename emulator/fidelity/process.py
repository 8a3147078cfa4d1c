"""Process settings that keep a live switch or NIC agent on its schedule.

:func:`tighten_timer_slack`: Linux lets a sleeping process oversleep by its
*timer slack* (50 µs by default) so wake-ups can be batched; a switch or
agent that waits with ``select`` for a departure due in 100 µs would then
be up to half a frame late before it runs a line of code. Setting the
slack to 1 µs (``prctl(PR_SET_TIMERSLACK)``) costs a few more wake-ups.
Where prctl is missing (not Linux) nothing happens.

:class:`RealtimeGuard`: real-time priority for a thread while it stays
light (see there).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time

PR_SET_TIMERSLACK = 29
TIMER_SLACK_NS = 1000


def tighten_timer_slack(slack_ns: int = TIMER_SLACK_NS) -> bool:
    """Set this thread's (and its later threads') timer slack; True if it took."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(slack_ns), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


DEFAULT_RT_PRIORITY = 10
RT_MAX_SHARE = 0.6
RT_WINDOW_S = 1.0


class RealtimeGuard:
    """Real-time scheduling (``SCHED_FIFO``) for the calling thread while it
    stays light.

    On a machine busy with other work a woken switch or agent waits for the
    scheduler for milliseconds, longer than a frame time: its frames leave
    late. At a real-time priority it runs as soon as it wakes. A real-time
    thread that is busy all the time would starve the machine, so the guard
    watches the thread's own CPU time: once it uses more than
    :data:`RT_MAX_SHARE` of a core over :data:`RT_WINDOW_S`, it goes back to
    normal scheduling for good (``demoted``; the run is then overloaded and
    its lateness shows it). :meth:`start` and :meth:`check` must be called
    from the thread being scheduled (Linux schedules threads, not processes).
    Priority 0 (or no permission) leaves scheduling alone.
    """

    __slots__ = ("priority", "max_share", "window_s", "active", "demoted", "demoted_share",
                 "_t0", "_cpu0", "_next")

    def __init__(self, priority: int = DEFAULT_RT_PRIORITY, *, max_share: float = RT_MAX_SHARE,
                 window_s: float = RT_WINDOW_S) -> None:
        self.priority = priority
        self.max_share = max_share
        self.window_s = window_s
        self.active = False
        self.demoted = False
        self.demoted_share: float | None = None
        self._t0 = self._cpu0 = self._next = 0.0

    def start(self, now: float) -> bool:
        """Take the real-time priority; True if it took."""
        if self.priority <= 0 or not hasattr(os, "sched_setscheduler"):
            return False
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.priority))
        except (OSError, ValueError):
            return False
        self.active = True
        self._t0, self._cpu0 = now, time.thread_time()
        self._next = now + self.window_s
        return True

    def check(self, now: float) -> None:
        """Demote the thread if it was too busy over the last window."""
        if not self.active or now < self._next:
            return
        cpu = time.thread_time()
        share = (cpu - self._cpu0) / max(now - self._t0, 1e-9)
        self._t0, self._cpu0, self._next = now, cpu, now + self.window_s
        if share > self.max_share:
            try:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                return
            self.active = False
            self.demoted = True
            self.demoted_share = round(share, 3)

    def to_dict(self) -> dict[str, object]:
        return {"priority": self.priority if (self.active or self.demoted) else 0,
                "demoted": self.demoted, "demoted_share": self.demoted_share}
