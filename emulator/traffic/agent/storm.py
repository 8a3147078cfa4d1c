"""A PFC pause storm sent by a host NIC (IEEE 802.1Qbb frames, clause 36.2).

A NIC whose receive pipeline is stuck keeps telling its switch port to
stop: it sends PFC frames with a pause time on its lossless priorities
over and over, each before the previous one runs out, so the port facing
it never sends on those priorities again; the switch's buffers behind that
port fill and its own PFC carries the pause further upstream.

:class:`PauseStorm` is one such storm on one NIC: the XOFF frame (built
once, from the NIC's MAC, enabling ``priorities`` with ``quanta``) is due
at the start and then every ``interval_s``; by default every half of the
pause time at the NIC's line rate (``quanta × 512 / line_rate / 2``), so a
frame lost or late still lands before the pause ends. :meth:`stop` ends
the storm and, with ``xon``, owes one XON frame (the same priorities, time
0), as the NIC sends when its receive buffer drains. The NIC sends these
frames ahead of everything else and whatever its own pause state: MAC
control frames are never paused. Frames are counted in the NIC counters
(``pfc_tx``: every PFC frame sent; ``pfc_storm_frames``: the storm's XOFFs).

:func:`storm_request` carries out the control channel's ``pfc_storm``
request on an agent's NICs (:mod:`.control`)::

    {"op": "pfc_storm", "action": "start", "nic": "eth0", "priorities": [3],
     "quanta": 65535, "interval_us": null, "at_unix": null}
    {"op": "pfc_storm", "action": "stop", "nic": "eth0", "xon": true, "at_unix": null}

``nic`` may be left out when the agent has one NIC; ``priorities``
defaults to the NIC's PFC priorities (``pfc_priorities`` of its config),
``quanta`` to 65535, ``interval_us`` to half the pause time. With
``at_unix`` in the future the request is checked at once and carried out
by an agent timer at that wall-clock time (the scenario runner schedules
its storm events so, to the agent's clock rather than its own polling).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from emulator.traffic.layers.pfc import (
    MAX_PAUSE_QUANTA,
    NUM_PRIORITIES,
    pause_duration_s,
    pfc_frame,
)

INF = math.inf
DEFAULT_STORM_QUANTA = MAX_PAUSE_QUANTA


def default_interval_s(quanta: int, line_rate_bps: float) -> float:
    """Half the pause time of ``quanta`` at ``line_rate_bps``: a refresh always
    lands before the pause it renews runs out."""
    return pause_duration_s(quanta, line_rate_bps) / 2


class PauseStorm:
    """XOFF frames every ``interval_s`` from ``now`` on, until :meth:`stop`."""

    __slots__ = ("priorities", "quanta", "interval_s", "xoff", "xon", "next_at", "active",
                 "xon_due", "frames", "started_at", "stopped_at")

    def __init__(self, src_mac: str, priorities: Sequence[int], quanta: int,
                 interval_s: float, now: float) -> None:
        if not priorities:
            raise ValueError("a PFC storm needs at least one priority")
        if not 1 <= quanta <= MAX_PAUSE_QUANTA:
            raise ValueError(f"storm quanta {quanta} is not in 1..{MAX_PAUSE_QUANTA}")
        if not interval_s > 0:
            raise ValueError(f"storm interval {interval_s!r} s is not > 0")
        self.priorities = tuple(sorted(set(priorities)))
        self.quanta = quanta
        self.interval_s = interval_s
        # pfc_frame checks the priorities (0..7)
        self.xoff = bytes(pfc_frame(src_mac, {p: quanta for p in self.priorities}))
        self.xon = bytes(pfc_frame(src_mac, {p: 0 for p in self.priorities}))
        self.next_at = now
        self.active = True
        self.xon_due = False
        self.frames = 0
        self.started_at = now
        self.stopped_at: float | None = None

    def next_time(self) -> float:
        """When the next frame is due (``-inf``: an XON now; ``inf``: none)."""
        if self.xon_due:
            return -INF
        return self.next_at if self.active else INF

    def take(self, now: float) -> bytes | None:
        """The frame to send at ``now``, or None when none is due."""
        if self.xon_due:
            self.xon_due = False
            return self.xon
        if not self.active or self.next_at > now:
            return None
        self.frames += 1
        # keep the schedule; after a late wake-up, no burst to catch up
        nxt = self.next_at + self.interval_s
        self.next_at = nxt if nxt > now else now + self.interval_s
        return self.xoff

    def stop(self, now: float, xon: bool = True) -> None:
        if self.active:
            self.active = False
            self.stopped_at = now
            self.xon_due = xon

    def to_dict(self, wall_offset: float = 0.0) -> dict[str, Any]:
        return {"active": self.active, "priorities": list(self.priorities),
                "quanta": self.quanta, "interval_s": self.interval_s, "frames": self.frames,
                "started_unix": self.started_at + wall_offset,
                "stopped_unix": None if self.stopped_at is None
                else self.stopped_at + wall_offset}


def storm_request(agent: Any, request: Mapping[str, Any], now: float) -> dict[str, Any]:
    """Start or stop a storm on one of ``agent``'s NICs (``nic_by_name``), now
    or by a timer (``timers``) at ``at_unix`` (``wall`` turns it into the
    agent's clock); raises ValueError naming what is wrong with the request."""
    nics: Mapping[str, Any] = agent.nic_by_name
    at_unix = request.get("at_unix")
    if at_unix is not None and (not isinstance(at_unix, (int, float))
                                or isinstance(at_unix, bool)):
        raise ValueError(f"pfc_storm: at_unix must be a Unix time or null, not {at_unix!r}")
    at = None if at_unix is None else float(at_unix) - agent.wall
    action = request.get("action")
    if action not in ("start", "stop"):
        raise ValueError(f"pfc_storm: action {action!r} is not start or stop")
    name = request.get("nic")
    if name is None:
        if len(nics) != 1:
            raise ValueError(f"pfc_storm: name the nic, one of {', '.join(nics)}")
        name = next(iter(nics))
    nic = nics.get(name)
    if nic is None:
        raise ValueError(f"pfc_storm: no nic {name!r}; the agent has {', '.join(nics)}")
    if action == "stop":
        xon = request.get("xon", True)
        if not isinstance(xon, bool):
            raise ValueError("pfc_storm: xon must be true or false")
        if at is not None and at > now:
            agent.timers.schedule(at, lambda t: nic.stop_storm(t, xon=xon))
            return {"nic": name, "frames": None, "at_unix": at_unix}
        return {"nic": name, "frames": nic.stop_storm(now, xon=xon)}
    priorities = request.get("priorities")
    if priorities is None:
        priorities = list(nic.config.pfc_priorities)
    if (not isinstance(priorities, list) or not priorities
            or not all(isinstance(p, int) and 0 <= p < NUM_PRIORITIES for p in priorities)):
        raise ValueError(f"pfc_storm: priorities must be a non-empty list of 0..7, "
                         f"not {priorities!r}")
    quanta = request.get("quanta", DEFAULT_STORM_QUANTA)
    if not isinstance(quanta, int) or isinstance(quanta, bool) \
            or not 1 <= quanta <= MAX_PAUSE_QUANTA:
        raise ValueError(f"pfc_storm: quanta must be a whole number 1..{MAX_PAUSE_QUANTA}, "
                         f"not {quanta!r}")
    interval_us = request.get("interval_us")
    if interval_us is None:
        interval_s = default_interval_s(quanta, nic.config.line_rate_bps)
    elif isinstance(interval_us, (int, float)) and not isinstance(interval_us, bool) \
            and interval_us > 0:
        interval_s = interval_us / 1e6
    else:
        raise ValueError(f"pfc_storm: interval_us must be a number > 0, not {interval_us!r}")
    # checked here, so that a deferred start cannot fail later
    storm = PauseStorm(nic.config.mac, priorities, quanta, interval_s, now)
    answer = {"nic": name, "priorities": list(storm.priorities), "quanta": quanta,
              "interval_us": interval_s * 1e6}
    if at is not None and at > now:
        agent.timers.schedule(at, lambda t: nic.start_storm(priorities, quanta, interval_s, t))
        return {**answer, "at_unix": at_unix}
    nic.start_storm(priorities, quanta, interval_s, now)
    return answer
