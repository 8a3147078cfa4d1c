"""Agents on a virtual clock, joined by in-memory wires: the test harness.

:class:`SimNetwork` runs agents whose NICs are :class:`~.backends.FakeNic`
back ends. :meth:`SimNetwork.connect` joins two NICs by a wire with a fixed
one-way delay and an optional ``hook(frame, src, dst) -> frame | None``
that may drop a frame (return None) or change it (mark CE with
:func:`mark_ce`, say). :meth:`SimNetwork.run` advances virtual time from
event to event: frame deliveries and each agent's
:meth:`~.agent.Agent.next_wakeup`. Nothing sleeps, nothing is random: a
run is repeatable to the bit.
"""

from __future__ import annotations

import heapq
import math
import struct
from typing import Callable

from emulator.traffic.agent.agent import Agent
from emulator.traffic.agent.backends import FakeNic
from emulator.traffic.agent.config import AgentConfig

Hook = Callable[[bytes, str, str], "bytes | None"]


class SimClock:
    """A clock that moves only when told; call it for the time."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class SimNetwork:
    """Agents on fake NICs, wires between them, and a virtual clock."""

    def __init__(self, start: float = 0.0) -> None:
        self.clock = SimClock(start)
        self.agents: dict[str, Agent] = {}
        self.fakes: dict[tuple[str, str], FakeNic] = {}
        self._nic_index: dict[tuple[str, str], int] = {}
        self._deliveries: list[tuple[float, int, Agent, int, bytes]] = []
        self._seq = 0
        self.events = 0

    def add_agent(self, config: AgentConfig) -> Agent:
        if config.name in self.agents:
            raise ValueError(f"agent {config.name} exists")
        backends = {}
        for i, nic in enumerate(config.nics):
            fake = FakeNic(nic.name, self.clock)
            backends[nic.name] = fake
            self.fakes[(config.name, nic.name)] = fake
            self._nic_index[(config.name, nic.name)] = i
        agent = Agent(config, backends, self.clock.now)
        self.agents[config.name] = agent
        return agent

    def connect(self, a: tuple[str, str], b: tuple[str, str], *, delay_s: float = 0.0,
                hook: Hook | None = None) -> None:
        """Join NIC ``a`` = (agent, nic) and NIC ``b`` both ways."""
        for src, dst in ((a, b), (b, a)):
            self.fakes[src].on_send = self._sender(src, dst, delay_s, hook)

    def _sender(self, src: tuple[str, str], dst: tuple[str, str], delay_s: float,
                hook: Hook | None) -> Callable[[bytes], None]:
        src_name = f"{src[0]}/{src[1]}"
        dst_name = f"{dst[0]}/{dst[1]}"
        index = self._nic_index[dst]
        agent = self.agents[dst[0]]
        clock = self.clock
        deliveries = self._deliveries
        push = heapq.heappush

        def send(frame: bytes) -> None:
            if hook is not None:
                frame = hook(frame, src_name, dst_name)
                if frame is None:
                    return
            self._seq += 1
            push(deliveries, (clock.now + delay_s, self._seq, agent, index, frame))
        return send

    def inject(self, agent: str, nic: str, frame: bytes, at: float | None = None) -> None:
        """Make NIC ``nic`` of ``agent`` receive ``frame`` at ``at`` (default now)."""
        self._seq += 1
        heapq.heappush(self._deliveries, (self.clock.now if at is None else at, self._seq,
                                          self.agents[agent], self._nic_index[(agent, nic)],
                                          bytes(frame)))

    def run(self, until: float, *, max_events: int = 2_000_000,
            stop_when: Callable[[], bool] | None = None) -> float:
        """Advance to ``until`` (or until ``stop_when()``); returns the time reached."""
        clock = self.clock
        agents = list(self.agents.values())
        deliveries = self._deliveries
        pop = heapq.heappop
        services = [agent.service for agent in agents]
        wakeups = [agent.next_wakeup for agent in agents]
        for service in services:
            service(clock.now)
        while True:
            t = math.inf
            for wakeup in wakeups:
                wake = wakeup()
                if wake < t:
                    t = wake
            if deliveries and deliveries[0][0] < t:
                t = deliveries[0][0]
            if t > until:
                clock.now = max(clock.now, until)
                return clock.now
            if t > clock.now:
                clock.now = t
            now = clock.now
            while deliveries and deliveries[0][0] <= now:
                _t, _s, agent, index, frame = pop(deliveries)
                agent.on_frame(index, frame, now)
            for service in services:
                service(now)
            self.events += 1
            if self.events > max_events:
                raise RuntimeError(f"more than {max_events} events by t={now}")
            if stop_when is not None and stop_when():
                return now


def mark_ce(frame: bytes) -> bytes:
    """The frame with IPv4 ECN set to CE (0b11) and the header checksum redone
    (the ICRC masks the TOS byte, so it stays valid)."""
    ip = 14
    header = bytearray(frame[ip:ip + 20])
    header[1] |= 0b11
    header[10:12] = b"\x00\x00"
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    header[10:12] = struct.pack("!H", ~total & 0xFFFF)
    return frame[:ip] + bytes(header) + frame[ip + 20:]
