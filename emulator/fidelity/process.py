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
import gc
import os
import time

PR_SET_TIMERSLACK = 29
TIMER_SLACK_NS = 1000


def settle_memory() -> None:
    """Move everything allocated so far (modules, the program, tables) out of
    the garbage collector's sight (``gc.freeze``): a full collection then
    scans only what the run itself made, a pause of microseconds, not of the
    milliseconds a frame may not wait."""
    gc.collect()
    gc.freeze()


def tighten_timer_slack(slack_ns: int = TIMER_SLACK_NS) -> bool:
    """Set this thread's (and its later threads') timer slack; True if it took."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(slack_ns), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


DEFAULT_RT_PRIORITY = 10
RT_MAX_SHARE = 0.6
RT_RESUME_SHARE = 0.3
RT_WINDOW_S = 1.0


class RealtimeGuard:
    """Real-time scheduling (``SCHED_FIFO``) for a whole process while it
    stays light.

    On a machine busy with other work a woken switch or agent waits for the
    scheduler for milliseconds, longer than a frame time: its frames leave
    late. At a real-time priority it runs as soon as it wakes. Every thread
    of the process gets the priority (at :meth:`start` and at each
    :meth:`check`, so threads started since are included): in a Python
    process a real-time thread that needs the GIL held by a normal thread
    the scheduler put aside would wait as long as that thread does.

    A real-time process that is busy all the time would starve the machine,
    so the guard watches the process's CPU time: over a window of
    :data:`RT_WINDOW_S` in which it used more than :data:`RT_MAX_SHARE` of a
    core it goes back to normal scheduling (loading a P4 program does
    that), and it takes the priority again after a window below
    :data:`RT_RESUME_SHARE`. ``demotions`` counts the windows it lost the
    priority in since the last :meth:`reset` (a run's traffic should have
    none: an overloaded process measures the host). :meth:`check` must be
    called regularly (the switch's housekeeping, the agent's loop); priority
    0, or no permission, leaves scheduling alone.
    """

    __slots__ = ("priority", "max_share", "resume_share", "window_s", "active", "enabled",
                 "demotions", "max_share_seen", "_t0", "_cpu0", "_next")

    def __init__(self, priority: int = DEFAULT_RT_PRIORITY, *, max_share: float = RT_MAX_SHARE,
                 resume_share: float = RT_RESUME_SHARE, window_s: float = RT_WINDOW_S) -> None:
        self.priority = priority
        self.max_share = max_share
        self.resume_share = resume_share
        self.window_s = window_s
        self.enabled = False   # real-time scheduling works here
        self.active = False    # the process has the priority now
        self.demotions = 0
        self.max_share_seen = 0.0
        self._t0 = self._cpu0 = self._next = 0.0

    def start(self, now: float) -> bool:
        """Take the real-time priority; True if it took."""
        if self.priority <= 0 or not hasattr(os, "sched_setscheduler"):
            return False
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.priority))
        except (OSError, ValueError):
            return False
        self.enabled = self.active = True
        _set_threads(os.SCHED_FIFO, self.priority)
        self._t0, self._cpu0 = now, time.process_time()
        self._next = now + self.window_s
        return True

    def check(self, now: float) -> None:
        """Drop or retake the priority by the process's CPU use over the
        last window (see the class docstring)."""
        if not self.enabled or now < self._next:
            return
        cpu = time.process_time()
        share = (cpu - self._cpu0) / max(now - self._t0, 1e-9)
        self._t0, self._cpu0, self._next = now, cpu, now + self.window_s
        if self.active:
            self.max_share_seen = max(self.max_share_seen, share)
        if share > self.max_share:
            if self.active:  # a drop counts once, when it happens
                _set_threads(os.SCHED_OTHER, 0)
                self.active = False
                self.demotions += 1
        elif self.active or share < self.resume_share:
            _set_threads(os.SCHED_FIFO, self.priority)
            self.active = True

    def reset(self, now: float | None = None) -> None:
        """Forget the drops so far and start a fresh window at ``now`` (the
        monotonic clock by default), so none of the CPU used before (loading
        a program) is counted after."""
        self.demotions = 0
        self.max_share_seen = 0.0
        now = time.monotonic() if now is None else now
        self._t0, self._cpu0, self._next = now, time.process_time(), now + self.window_s

    def to_dict(self) -> dict[str, object]:
        return {"priority": self.priority if self.enabled else 0, "active": self.active,
                "demotions": self.demotions, "max_share": round(self.max_share_seen, 3)}


def _set_threads(policy: int, priority: int) -> None:
    """Every thread of this process to ``policy`` (threads that went away
    meanwhile are skipped)."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return
    for tid in tids:
        try:
            if os.sched_getscheduler(tid) != policy:
                os.sched_setscheduler(tid, policy, os.sched_param(priority))
        except OSError:
            continue
