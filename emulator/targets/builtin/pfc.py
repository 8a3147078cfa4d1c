"""Priority flow control below P4, as a port's MAC does it (IEEE 802.1Qbb).

A PFC frame is a MAC control frame (EtherType 0x8808) with opcode 0x0101, a
2-byte class-enable vector (bit n enables priority n) and eight 2-byte pause
times in quanta of 512 bit times at the port's speed (802.1Qbb clause 36.2).
The destination 01:80:c2:00:00:01 is not checked: a MAC acts on the
EtherType and opcode.

Received on port P, a frame pauses P's egress queue of every enabled
priority on which P honours PFC, for ``quanta × 512 / rate_bps`` seconds
from its arrival; a new frame restarts the timer (it does not add to it),
zero quanta resume at once. Priority n pauses queue n; with fewer than eight
priority queues the higher priorities pause nothing. An unlimited port
(``rate_bps`` 0) times its quanta at :data:`UNLIMITED_PORT_PFC_RATE_BPS`.

:class:`PauseTimers` keeps one port's pause state and how long each
priority has been paused; the data plane owns the timer events.
"""

from __future__ import annotations

import struct

PFC_ETHERTYPE = 0x8808
PFC_OPCODE = 0x0101
BITS_PER_QUANTUM = 512
NUM_PRIORITIES = 8
UNLIMITED_PORT_PFC_RATE_BPS = 100e9
_BODY = struct.Struct("!HH8H")  # opcode, class-enable vector, 8 pause times
_MIN_LENGTH = 14 + _BODY.size


def parse_pfc(frame: bytes) -> tuple[int, tuple[int, ...]] | None:
    """(class-enable vector, eight pause times in quanta), or None when the
    frame is not a PFC frame. Never raises on short or random bytes."""
    if len(frame) < _MIN_LENGTH or frame[12] != 0x88 or frame[13] != 0x08:
        return None
    opcode, vector, *times = _BODY.unpack_from(frame, 14)
    if opcode != PFC_OPCODE:
        return None
    return vector & 0xFF, tuple(times)


def pause_seconds(quanta: int, rate_bps: float) -> float:
    """How long ``quanta`` pause a port of ``rate_bps`` (0 = unlimited)."""
    return quanta * BITS_PER_QUANTUM / (rate_bps or UNLIMITED_PORT_PFC_RATE_BPS)


class PauseTimers:
    """Pause state of one port's eight priorities.

    ``mask`` has bit n set while priority n is paused; ``until[n]`` is when
    its pause ends. Paused time is counted from the start of a pause to its
    end (expiry or XON), plus the running part of a pause still on."""

    __slots__ = ("mask", "until", "since", "paused_s")

    def __init__(self) -> None:
        self.mask = 0
        self.until = [0.0] * NUM_PRIORITIES
        self.since = [0.0] * NUM_PRIORITIES
        self.paused_s = [0.0] * NUM_PRIORITIES

    def pause(self, priority: int, until: float, now: float) -> bool:
        """Pause ``priority`` until ``until``; True when it was not paused."""
        bit = 1 << priority
        self.until[priority] = until
        if self.mask & bit:
            return False
        self.mask |= bit
        self.since[priority] = now
        return True

    def resume(self, priority: int, now: float) -> bool:
        """End the pause of ``priority`` at ``now``; True when it was paused."""
        bit = 1 << priority
        if not self.mask & bit:
            return False
        self.mask &= ~bit
        self.paused_s[priority] += max(0.0, now - self.since[priority])
        self.until[priority] = now
        return True

    def expired(self, priority: int, until: float) -> bool:
        """True when a timer set for ``until`` is still the one in force."""
        return bool(self.mask >> priority & 1) and self.until[priority] == until

    def total_paused_s(self, priority: int, now: float) -> float:
        running = now - self.since[priority] if self.mask >> priority & 1 else 0.0
        return self.paused_s[priority] + max(0.0, running)

    def reset_stats(self, now: float) -> None:
        for p in range(NUM_PRIORITIES):
            self.paused_s[p] = 0.0
            if self.mask >> p & 1:
                self.since[p] = now
