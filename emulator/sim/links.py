"""Links of a simulated fabric and the two kinds of node they join.

A :class:`Link` joins two ends, each a back end with the switch ports' and
the NIC agents' shape (``name``, ``fileno() -> None``, ``recv() -> None``,
``send(frame) -> bool``, ``close()``), so the switch's
:class:`~emulator.targets.builtin.dataplane.DataPlane` and the agent's
:class:`~emulator.traffic.agent.nic.Nic` use them as they use sockets. Who
realises what on the wire, as on the live target:

- a **switch port** serialises at its rate (the data plane's TX_DONE
  timer), then sends: :class:`PortEnd` hands the frame to the peer after
  the link's propagation delay (on a live switch the data plane waits the
  delay out itself; here the link does, so that a frame's arrival is known
  one delay ahead, what lets several engines run a fabric side by side,
  :mod:`.parallel`);
- a **NIC** hands a frame to its back end when its serialisation *starts*
  (its pacer then keeps the line busy for it): :class:`NicEnd` delivers it
  at ``now + (len + overhead) × 8 / rate + delay``, the instant its last bit
  reaches the switch port.

So every frame crosses every link with serialisation at the sender's rate
and the link's delay, in both directions, and arrives whole (store and
forward). A link that is down refuses frames (the sender counts a
``tx_error``) and loses the ones in flight (``lost_in_flight``).

:class:`SwitchNode` and :class:`AgentNode` are the engine's components for
a switch's data plane and a server's NIC agent.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from emulator.sim.engine import INF, Component, Engine, Landing, SimClock
from emulator.targets.builtin.pcap import PcapWriter

Receive = Callable[[bytes, float], None]


class SwitchNode(Component):
    """A switch's data plane as an engine component."""

    __slots__ = ("dataplane",)

    def __init__(self, name: str, switch: Any, key: int = 0) -> None:
        super().__init__(name, key)
        self.dataplane = switch.dataplane

    def next_time(self) -> float:
        t = self.dataplane.next_deadline()
        return INF if t is None else t

    def wake(self, now: float) -> None:
        self.dataplane.run_due(now)

    def receiver(self, port: int) -> Receive:
        dp = self.dataplane
        return SwitchReceive(dp, dp.port(port))


class SwitchReceive:
    """A switch port's receive: ``dataplane.rx(port, frame, now)``. A link's
    end that lands on one calls the data plane directly (:meth:`_End.land`)."""

    __slots__ = ("dataplane", "port")

    def __init__(self, dataplane: Any, port: Any) -> None:
        self.dataplane = dataplane
        self.port = port

    def __call__(self, frame: bytes, now: float) -> None:
        self.dataplane.rx(self.port, frame, now)


_ALL = None


class AgentNode(Component):
    """A server's NIC agent as an engine component.

    Its next time is what :meth:`~emulator.traffic.agent.agent.Agent.next_wakeup`
    would say, kept per NIC: a frame delivered to one NIC changes that NIC's
    next send and the agent's timers, nothing of the other NICs (work that
    follows an arrival elsewhere is posted by a timer), so only that NIC is
    asked again. A wake-up runs the agent's due timers and, when none was
    due, services only the NICs whose time has come (what
    :meth:`~emulator.traffic.agent.agent.Agent.service` would do, without
    visiting the idle ones: on this clock nothing wakes late, so an idle
    NIC has no lag to give up). Anything else done to the agent from
    outside asks every NIC again."""

    __slots__ = ("agent", "timers", "nics", "nic_times", "touched")

    def __init__(self, name: str, agent: Any, key: int = 0) -> None:
        super().__init__(name, key)
        self.agent = agent
        self.timers = agent.timers  # (made with the agent, never replaced)
        self.nics = list(agent.nics)
        self.nic_times = [INF] * len(self.nics)
        self.touched: list[int] | None = _ALL

    def next_time(self) -> float:
        agent = self.agent
        if agent.stopped:
            return INF
        times = self.nic_times
        touched = self.touched
        nics = self.nics
        if touched is _ALL:
            for i in range(len(nics)):
                nic = nics[i]
                times[i] = nic.next_tx_time()
        else:
            for i in touched:
                nic = nics[i]
                times[i] = nic.next_tx_time()
        self.touched = _ALL
        t = self.timers.next_time()
        for n in times:
            if n < t:
                t = n
        return t

    def wake(self, now: float) -> None:
        if self.timers.run_due(now):
            for nic in self.nics:   # a timer may have given any NIC work
                nic.service(now)
            return
        times = self.nic_times
        serviced = []
        nics = self.nics
        for i in range(len(nics)):
            if times[i] <= now:
                nic = nics[i]
                nic.service(now)
                serviced.append(i)
        self.touched = serviced

    def receiver(self, nic_index: int) -> Receive:
        on_frame = self.agent.on_frame
        only = [nic_index]

        def receive(frame: bytes, now: float) -> None:
            on_frame(nic_index, frame, now)
            self.touched = only
        return receive


class _End(Landing):
    """One end of a link: the back end its node sends through. ``key``
    (unique in the fabric) and ``sent`` order its frames' deliveries among
    others at the same instant (:mod:`.engine`); ``delay_s`` is what its
    frames take to cross the link."""

    __slots__ = ("name", "link", "engine", "peer_receive", "pcap", "key", "delay_s")

    def __init__(self, name: str, link: "Link", engine: Engine, key: int = 0) -> None:
        super().__init__(key)
        self.name = name
        self.link = link
        self.engine = engine
        self.peer_receive: Receive | None = None
        self.pcap: PcapWriter | None = None
        self.key = key
        self.delay_s = link.delay_s

    def fileno(self) -> None:
        return None

    def recv(self) -> None:
        return None

    def close(self) -> None:
        if self.pcap is not None:
            self.pcap.close()

    def land(self, frame: bytes, epoch: int, now: float) -> None:
        """The engine's delivery: ``frame``, sent in the link's ``epoch``,
        reached the far end at ``now``."""
        if epoch != self.link.epoch:  # the link went down while the frame was on it
            self.link.lost_in_flight += 1
            return
        receive = self.peer_receive
        if type(receive) is SwitchReceive:
            switch = receive  # (typed where compiled: a C call of rx)
            # The engine holds the frame only to hand it over (Engine._run).
            switch.dataplane.rx(switch.port, frame, now, 1)
        else:
            receive(frame, now)  # type: ignore[misc]


class PortEnd(_End):
    """A switch port's end: the data plane already spent serialisation; the
    frame arrives ``delay_s`` later."""

    __slots__ = ()

    def send(self, frame: bytes) -> bool:
        link = self.link
        if not link.up:
            return False
        self.sent += 1
        engine = self.engine
        engine.deliver(engine.clock.now + self.delay_s, self, frame, link.epoch)
        return True


class NicEnd(_End):
    """A NIC's end: the frame starts serialising now at the NIC's rate, or
    when the frame before it has left (the wire is FIFO whatever the NIC's
    pacer allows: a frame never overtakes a longer one sent before it)."""

    __slots__ = ("s_per_byte", "overhead_bytes", "free_at", "queued_s")

    def __init__(self, name: str, link: "Link", engine: Engine, rate_bps: float,
                 overhead_bytes: int = 0, key: int = 0) -> None:
        super().__init__(name, link, engine, key)
        self.s_per_byte = 8.0 / rate_bps if rate_bps > 0 else 0.0
        self.overhead_bytes = overhead_bytes
        self.free_at = 0.0      # when the wire finishes the last frame
        self.queued_s = 0.0     # time frames waited for the wire (the NIC sent faster than its rate)

    def send(self, frame: bytes) -> bool:
        if not self.link.up:
            return False
        n = len(frame)
        now = self.engine.clock.now
        if self.pcap is not None:
            self.pcap.write(frame, round(now * 1e9))
        start = self.free_at
        if start < now:
            start = now
        else:
            self.queued_s += start - now
        end = self.free_at = start + (n + self.overhead_bytes) * self.s_per_byte
        self.sent += 1
        self.engine.deliver(end + self.delay_s, self, frame, self.link.epoch)
        return True

    def capture(self, path: Path, clock: SimClock) -> None:
        """Record what this NIC sends and receives (simulated timestamps)."""
        self.pcap = PcapWriter(path)
        receive = self.link.end_receive(self)
        pcap = self.pcap

        def tapped(frame: bytes, now: float) -> None:
            pcap.write(frame, round(now * 1e9))
            receive(frame, now)
        self.link.set_end_receive(self, tapped)


class Link:
    """Two ends, a propagation delay and an up/down state."""

    __slots__ = ("name", "delay_s", "up", "epoch", "lost_in_flight", "ends")

    def __init__(self, name: str, delay_s: float) -> None:
        if delay_s < 0 or math.isnan(delay_s):
            raise ValueError(f"link {name}: delay {delay_s!r} s is not a delay")
        self.name = name
        self.delay_s = delay_s
        self.up = True
        self.epoch = 0            # changes when the link goes down
        self.lost_in_flight = 0
        self.ends: list[_End] = []

    def join(self, a: _End, a_node: Component, a_receive: Receive,
             b: _End, b_node: Component, b_receive: Receive) -> None:
        """Wire ``a`` (owned by ``a_node``, which receives with ``a_receive``)
        to ``b``."""
        a.peer_node, a.peer_receive = b_node, b_receive
        b.peer_node, b.peer_receive = a_node, a_receive
        self.ends = [a, b]

    def end_receive(self, end: _End) -> Receive:
        """How ``end``'s own node receives (what the other end delivers to)."""
        other = self.ends[1] if self.ends[0] is end else self.ends[0]
        assert other.peer_receive is not None
        return other.peer_receive

    def set_end_receive(self, end: _End, receive: Receive) -> None:
        other = self.ends[1] if self.ends[0] is end else self.ends[0]
        other.peer_receive = receive

    def set_up(self, up: bool) -> None:
        if self.up and not up:
            self.epoch += 1
        self.up = up
