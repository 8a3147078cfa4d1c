"""A server's scale-up switch, timed inside its agent (live runs).

A live run builds no scale-up tier on veths: NVLink-class rates cannot be
carried there faithfully, even slowed down. GPUs of one server still talk
over it: their scale-up ports are :class:`ScaleUpPort` back ends of one
:class:`ScaleUpSwitch` in the agent's process, and a frame one port sends
is handed to the receiving NIC by the agent's own timer heap at the time a
scale-up switch would deliver it:

- the sender's NIC serialises it at its line rate (the scale-up rate, its
  pacer, as on every NIC), then half the hop latency to the switch;
- the switch's egress port to the receiver serialises it at the same rate
  once the port is free (frames of several senders to one receiver queue
  there, in arrival order: contention), then the other half of the hop.

A lone frame therefore takes what a frame over the sim's scale-up switch
takes (serialisation at both ends plus the hop latency). The egress queue
has no limit and sends no pause: NVLink's credit-based flow control loses
nothing, and the sender is held by the same serialisation instead. Frames
are routed by destination IPv4 address; anything else (no IPv4, an address
of no port) is counted and dropped.
"""

from __future__ import annotations

import socket
from typing import Any, Callable

_IPV4 = b"\x08\x00"


class ScaleUpPort:
    """One GPU's scale-up port: a NIC back end (:mod:`.backends`' interface)
    whose frames go to its :class:`ScaleUpSwitch`."""

    def __init__(self, switch: ScaleUpSwitch, name: str) -> None:
        self.name = name
        self._switch = switch
        self.sent_frames = 0

    def fileno(self) -> None:
        return None  # frames arrive through the agent's timers, not a descriptor

    def recv(self) -> None:
        return None

    def send(self, frame: bytes) -> bool:
        self.sent_frames += 1
        return self._switch.forward(frame)

    def flush(self) -> None:
        """Frames leave in ``send``."""

    def tx_stats(self) -> dict[str, object]:
        return {"mode": "scale-up switch in the agent", "frames": self.sent_frames}

    def close(self) -> None:
        """Nothing to release."""


class ScaleUpSwitch:
    """The scale-up switch of one server's GPUs (module docstring): ``rate_bps``
    per port and direction, ``hop_s`` from sender to receiver, frames of
    ``overhead_bytes`` more on the wire (as the NICs' pacers count them)."""

    def __init__(self, rate_bps: float, hop_s: float, clock: Callable[[], float], *,
                 overhead_bytes: int = 0) -> None:
        self.rate_bps = rate_bps
        self.hop_s = hop_s
        self._clock = clock
        self._s_per_byte = 8.0 / rate_bps
        self._overhead = overhead_bytes
        self._port_of_ip: dict[bytes, int] = {}  # receiver's address -> its NIC index
        self._free_at: dict[int, float] = {}  # egress port -> when it is free
        self._schedule: Callable[[float, Callable[[float], None]], Any] | None = None
        self._deliver: Callable[[int, bytes, float], None] | None = None
        self.forwarded = 0
        self.dropped = 0
        self.max_wait_s = 0.0  # the longest a frame waited for its egress port

    def port(self, name: str, ip: str, nic_index: int) -> ScaleUpPort:
        """The port of the NIC ``name`` (address ``ip``, index ``nic_index`` in the agent)."""
        self._port_of_ip[socket.inet_aton(ip)] = nic_index
        self._free_at[nic_index] = 0.0
        return ScaleUpPort(self, name)

    def attach(self, schedule: Callable[[float, Callable[[float], None]], Any],
               deliver: Callable[[int, bytes, float], None]) -> None:
        """Deliver through the agent: ``schedule(when, fn)`` its timer heap,
        ``deliver(nic_index, frame, now)`` its receive path."""
        self._schedule = schedule
        self._deliver = deliver

    def forward(self, frame: bytes) -> bool:
        """Take a frame its sender starts serialising now; False when it goes nowhere."""
        egress = self._port_of_ip.get(frame[30:34]) if frame[12:14] == _IPV4 else None
        if egress is None or self._schedule is None:
            self.dropped += 1
            return True  # sent, and lost inside the switch (counted)
        wire_s = (len(frame) + self._overhead) * self._s_per_byte
        arrives = self._clock() + wire_s + self.hop_s / 2  # the last bit at the switch
        start = max(arrives, self._free_at[egress])
        if start > arrives:
            self.max_wait_s = max(self.max_wait_s, start - arrives)
        self._free_at[egress] = start + wire_s
        deliver = self._deliver
        assert deliver is not None
        self.forwarded += 1
        self._schedule(start + wire_s + self.hop_s / 2,
                       lambda now: deliver(egress, frame, now))
        return True

    def stats(self) -> dict[str, Any]:
        return {"rate_bps": self.rate_bps, "hop_s": self.hop_s, "forwarded": self.forwarded,
                "dropped": self.dropped, "max_wait_s": self.max_wait_s}
