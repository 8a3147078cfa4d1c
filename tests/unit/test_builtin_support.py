"""Helpers of the built-in switch tests (no tests here): a virtual clock, the
basic IPv4 program with a priority from DSCP, a scripted fake pipeline, frame
builders and the counter sums every test checks."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

from emulator.p4 import ir
from emulator.p4.exec.pipeline import EgressItem, Output, ProcessResult, QueueInfo, V1ModelPipeline
from emulator.p4.types import BitsType
from emulator.targets.builtin.config import PortConfig
from emulator.targets.builtin.dataplane import DataPlane
from emulator.targets.builtin.ports import FakePort
from tests.unit.p4.irkit import basic_program, mem, ref

MAC = {1: 0x020000000101, 2: 0x020000000202, 3: 0x020000000303}


class VClock:
    """A clock tests move by hand (seconds)."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def us(self) -> float:
        return self.t * 1e6


def advance(dp: DataPlane, clock: VClock, until: float) -> None:
    """Run every data-plane event up to ``until``, moving the clock event by event."""
    while True:
        deadline = dp.next_deadline()
        if deadline is None or deadline > until:
            break
        clock.t = max(clock.t, deadline)
        dp.run_due(clock.t)
    clock.t = until


def basic_pipeline(clock: Callable[[], float] | None = None, priority_queues: int = 8,
                   ports: tuple[int, ...] = (1, 2, 3)) -> V1ModelPipeline:
    """Basic IPv4 forwarding (10.0.P.0/24 → port P, dst MAC rewritten) with
    ``standard_metadata.priority = hdr.ipv4.diffserv[7:5]``."""
    program, parts = basic_program()
    prio = ir.Assign(mem(ref(parts["i_sm"]), "priority"),
                     ir.Slice(BitsType(3), mem(ref(parts["i_hdr"]), "ipv4", "diffserv"), 7, 5))
    branch = parts["ingress"].body.stmts[0]
    branch.then = ir.Block(branch.then.stmts + (prio,))
    clock_us = (lambda: clock() * 1e6) if clock is not None else None
    pipe = V1ModelPipeline(program, priority_queues=priority_queues, clock_us=clock_us)
    table = pipe.table("MyIngress.ipv4_lpm")
    for port in ports:
        key = table.canonical_key([(0x0A000000 | port << 8, 24)])
        table.insert(table.make_entry("MyIngress.ipv4_forward", [MAC[port], port], key))
    return pipe


def ipv4_frame(dst_port: int, length: int = 100, priority: int = 0, src_port: int = 1,
               ident: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame of ``length`` bytes to 10.0.<dst_port>.2,
    DSCP precedence ``priority``, IP id ``ident``."""
    payload_len = length - 14 - 20 - 8
    assert payload_len >= 0
    eth = struct.pack("!6s6sH", b"\x02\x00\x00\x00\x00\xaa", b"\x02\x00\x00\x00\x00\xbb", 0x0800)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, priority << 5, 20 + 8 + payload_len, ident, 0, 64,
                     17, 0, bytes([10, 0, src_port, 1]), bytes([10, 0, dst_port, 2]))
    udp = struct.pack("!HHHH", 1000, 2000, 8 + payload_len, 0)
    return eth + ip + udp + bytes(payload_len)


def ip_ident(frame: bytes) -> int:
    return struct.unpack_from("!H", frame, 18)[0]


def pfc_frame(quanta: dict[int, int]) -> bytes:
    vector = sum(1 << p for p in quanta)
    times = [quanta.get(p, 0) for p in range(8)]
    body = struct.pack("!HH8H", 0x0101, vector, *times)
    frame = b"\x01\x80\xc2\x00\x00\x01" + b"\x02\x00\x00\x00\x00\xcc" + b"\x88\x08" + body
    return frame + bytes(60 - len(frame))


def make_dataplane(configs: dict[int, PortConfig], pipeline: object = None,
                   priority_queues: int = 8, **kw: object) -> tuple[DataPlane, VClock, dict[int, FakePort]]:
    clock = VClock()
    dp = DataPlane(priority_queues, clock=clock, **kw)  # type: ignore[arg-type]
    ports = {}
    for number, config in configs.items():
        ports[number] = FakePort(f"p{number}", clock)
        dp.add_port(number, ports[number], config)
    if pipeline is None:
        pipeline = basic_pipeline(clock, priority_queues)
    dp.set_pipeline(pipeline)  # type: ignore[arg-type]
    return dp, clock, ports


@dataclass
class ScriptedPipeline:
    """A stand-in for V1ModelPipeline: ``route(port, data, instance_type)``
    gives (egress port, priority) pairs; ``act(item, info)`` says what egress
    does: "out", "drop", "recirc", ("clone", port, priority) (plus out) or
    "raise". Outputs carry ``tag`` appended, to tell pipelines apart."""

    route: Callable[[int, bytes, int], list[tuple[int, int]]]
    act: Callable[[EgressItem, QueueInfo], object] = lambda item, info: "out"
    tag: bytes = b""
    clock: Callable[[], float] = lambda: 0.0
    priority_queues: int = 8
    digest: tuple[str, object] | None = None
    infos: list[QueueInfo] = field(default_factory=list)
    program: object = field(default_factory=lambda: SimpleNamespace(source="scripted"))
    tables: dict = field(default_factory=dict)

    def _clock_us(self) -> float:
        return self.clock() * 1e6

    def ingress(self, port: int, data: bytes, instance_type: int = 0,
                preserved: dict | None = None) -> ProcessResult:
        res = ProcessResult()
        targets = self.route(port, data, instance_type)
        if self.digest is not None:
            res.digests.append(self.digest)
        if not targets:
            res.dropped += 1
        for egress_port, prio in targets:
            res.queued.append(EgressItem(egress_port, prio, len(data), data))
        return res

    def egress(self, item: EgressItem, info: QueueInfo) -> ProcessResult:
        # a copy: the data plane sets one QueueInfo per port anew for each packet
        self.infos.append(QueueInfo(info.enq_qdepth, info.deq_qdepth, info.enq_timestamp_us))
        res = ProcessResult()
        action = self.act(item, info)
        if action == "raise":
            raise RuntimeError("scripted egress failure")
        if action == "drop":
            res.dropped += 1
        elif action == "recirc":
            res.recirculate.append((1, bytes(item.pkt), 4, {}))
        else:
            if isinstance(action, tuple) and action[0] == "clone":
                res.queued.append(EgressItem(action[1], action[2], item.length, item.pkt))
            res.outputs.append(Output(item.port, bytes(item.pkt) + self.tag, 0, item.priority))
        return res


def check_sums(stats: dict) -> None:
    """The counter sums of tm.py, for every queue of every port."""
    for port in stats["ports"]:
        for q in port["queues"]:
            where = f"port {port['port']} priority {q['priority']}: {q}"
            assert q["received"] == q["enqueued"] + q["tail_dropped"], where
            assert q["enqueued"] == q["dequeued"] + q["depth_packets"], where
            assert q["dequeued"] == q["egress_out"] + q["egress_dropped"] + q["recirculated"], where
            assert q["egress_out"] == q["tx_packets"] + q["tx_errors"] + q["in_flight"], where
            assert q["in_flight"] >= 0 and q["depth_packets"] >= 0, where
            assert q["max_depth_packets"] >= q["depth_packets"], where
        mac = port.get("mac_control")
        if mac is not None:  # pause frames the buffer sent, outside the priority queues
            assert mac["received"] == mac["enqueued"] + mac["tail_dropped"]
            assert mac["egress_out"] == mac["tx_packets"] + mac["tx_errors"] + mac["in_flight"]
        assert port["tx_packets"] == sum(q["tx_packets"] for q in port["queues"]) + (
            mac["tx_packets"] if mac is not None else 0)
        assert port["drops"]["tail"] == sum(q["tail_dropped"] for q in port["queues"])


def check_buffer(dp: DataPlane) -> None:
    """The buffer's invariant (emulator/targets/builtin/mmu.py): per ingress
    port and priority, the bytes its group holds (shared + headroom) are the
    bytes of that port's frames still queued; the pool's shared and headroom
    use are the sums over groups; a group's headroom never exceeds its size."""
    held: dict[tuple[int, int], int] = {}
    for ps in dp.ports.values():
        for prio, queue in enumerate(ps.tm.queues):
            for entry in queue:
                item, acc = entry.item, entry.account
                if acc is not None:
                    key = (acc.port.number, prio)
                    held[key] = held.get(key, 0) + item.length
    shared = headroom = 0
    for number, ps in dp.ports.items():
        acc = ps.pg
        for prio in range(8):
            assert acc.held(prio) == held.get((number, prio), 0), (number, prio)
            assert 0 <= acc.headroom_used[prio] <= max(acc.headroom[prio], 0), (number, prio)
            shared += acc.shared[prio]
            headroom += acc.headroom_used[prio]
    assert dp.buffer.used == shared and dp.buffer.headroom_in_use == headroom


def check_idle_buffer(dp: DataPlane) -> None:
    """An idle switch: nothing held anywhere, no group pausing its peer."""
    check_buffer(dp)
    assert dp.buffer.used == 0 and dp.buffer.headroom_in_use == 0
    for number, ps in dp.ports.items():
        assert ps.pg.xoff_on == 0, f"port {number} still pauses its peer"
        assert not ps.ctrl
