"""The per-flow cache of ingress decisions (emulator.p4.exec.decisions):
packets out and counters are the same with the cache as without it, fields
ingress never reads (the BTH PSN) stay out of the key, passes that read
registers, random numbers or timestamps are never cached, and every
control-plane write changes the next packet's decision."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from emulator.p4.exec.pipeline import QueueInfo, V1ModelPipeline
from emulator.p4.frontend import compile_file, compile_text
from tests.unit.p4.conformance_kit import StepClock, v1switch

FABRIC = Path(__file__).resolve().parents[3] / "p4src" / "fabric.p4"
ROCE_DSCP = 26


@pytest.fixture(scope="module")
def fabric():
    return compile_file(FABRIC)


def _fabric(program, cached: bool = True, executor: str | None = None) -> V1ModelPipeline:
    pipe = V1ModelPipeline(program, seed=3, clock_us=StepClock(), executor=executor)
    if not cached:
        pipe.decisions = None
    classify = pipe.table("FabricIngress.classify")
    classify.insert(classify.make_entry(
        "FabricIngress.set_priority", [3],
        classify.canonical_key([(ROCE_DSCP, 0x3F), (0, 0), (0, 0), (0, 0), (0, 0)]), priority=10))
    routes = pipe.table("FabricIngress.routes")
    profile = routes.profile
    for member, port in ((1, 1), (2, 2), (3, 3)):
        profile.add_member(member, routes.make_member(
            "FabricIngress.set_nexthop", [port, 0x020100000000 + port, 0x0200000000A0 + port]))
    profile.set_group(10, [2, 3])
    routes.insert(routes.make_indirect_entry(routes.canonical_key([(0x0A000100, 24)]), group=10))
    routes.insert(routes.make_indirect_entry(routes.canonical_key([(0x0A000002, 32)]), member=1))
    ecn = pipe.table("FabricEgress.ecn_config")
    ecn.insert(ecn.make_entry("FabricEgress.set_ecn", [5, 25, int(0.5 * 65536 / 20)],
                              ecn.canonical_key([2, 3])))
    return pipe


def roce(dst="10.0.1.7", sport=0xC000, psn=0, ttl=64, size=200, dscp=ROCE_DSCP) -> bytes:
    bth = bytes([0x0A, 0, 0xFF, 0xFF, 0, 0, 0, 0x11, 0]) + psn.to_bytes(3, "big")
    return bytes(Ether(src="02:00:0a:00:00:02", dst="02:01:00:00:00:01")
                 / IP(src="10.0.0.2", dst=dst, tos=(dscp << 2) | 2, ttl=ttl)
                 / UDP(sport=sport, dport=4791) / (bth + b"r" * size))


def _run(pipe: V1ModelPipeline, frames: list[tuple[int, bytes]]) -> list[tuple]:
    """Everything a frame leads to, egress with a queue depth that varies."""
    seen = []
    for i, (port, frame) in enumerate(frames):
        res = pipe.ingress(port, frame)
        outs = []
        for item in res.queued:
            out = pipe.egress(item, QueueInfo(enq_qdepth=i % 30))
            outs.append([(o.port, o.data, o.priority) for o in out.outputs])
        seen.append((res.dropped, outs))
    return seen


def _counters(pipe: V1ModelPipeline) -> dict:
    return {name: (list(c.packets), list(c.bytes)) for name, c in pipe.counters.items()}


def _mixed_frames() -> list[tuple[int, bytes]]:
    frames = []
    for rnd in range(3):
        for sport in range(0xC000, 0xC000 + 12):
            frames.append((1, roce(sport=sport, psn=rnd * 100 + sport, size=100 + rnd)))
        frames.append((2, roce(dst="10.0.0.2", psn=rnd)))  # a /32 member
        frames.append((1, roce(ttl=1)))                    # TTL expires: dropped, counted
        frames.append((1, roce(dst="192.168.0.1")))        # no route
        frames.append((1, roce(dscp=0)))                   # another class
        frames.append((3, bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / ARP())))
    return frames


def test_fabric_cached_matches_uncached_outputs_and_counters(fabric) -> None:
    frames = _mixed_frames()
    cached, plain = _fabric(fabric), _fabric(fabric, cached=False)
    assert cached.decisions is not None, cached.cache_off_reason
    assert _run(cached, frames) == _run(plain, frames)
    assert _counters(cached) == _counters(plain)
    # Rounds 2 and 3 repeat round 1's flows: all hits (PSN and length differ).
    per_round = len(frames) // 3
    assert cached.decisions.misses == per_round
    assert cached.decisions.hits == 2 * per_round
    assert sum(cached.counters["FabricIngress.rx_counter"].bytes) > 0


def test_key_leaves_out_fields_ingress_never_reads(fabric) -> None:
    paths = _fabric(fabric).decisions.paths
    assert "hdr.ipv4.dst_addr" in paths and "sm.ingress_port" in paths
    assert "hdr.ipv4.ttl" in paths and "hdr.ethernet.dst_addr" in paths  # read / written
    for unread in ("hdr.bth.psn", "hdr.ipv4.identification", "hdr.ipv4.hdr_checksum",
                   "hdr.udp.length", "sm.packet_length", "sm.ingress_global_timestamp",
                   # read only by the PFC digest, a pass never cached
                   "hdr.pfc.time0", "hdr.pfc.class_enable",
                   # mark_to_drop(standard_metadata) writes two fields, not all
                   "sm.instance_type", "sm.egress_port"):
        assert unread not in paths


def test_key_leaves_out_fields_fresh_for_every_packet(fabric) -> None:
    cache = _fabric(fabric).decisions
    assert set(cache.key_paths) <= set(cache.paths)
    # set by the parser or the pipeline before ingress: they vary
    for varying in ("hdr.ipv4.ttl", "hdr.ipv4._v", "meta.l4_src_port", "sm.ingress_port"):
        assert varying in cache.key_paths
    # touched by ingress, but zero (or invalid) whenever ingress starts
    for fresh in ("meta.flow_hash", "meta.ecmp_key", "sm.egress_spec", "sm.mcast_grp",
                  "sm.priority", "hdr.packet_in._v"):
        assert fresh in cache.paths and fresh not in cache.key_paths


PARSED_META_PROGRAM = v1switch(
    meta="struct metadata { bit<8> low; }",
    parser="""
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); meta.low = hdr.eth.src[7:0]; transition accept; }
}""",
    ingress="apply { sm.egress_spec = (bit<9>)meta.low; }")


def test_a_field_the_parser_sets_is_in_the_key() -> None:
    # Ingress reads only meta.low, which the parser copies from the source
    # MAC: two frames that differ there must not share a decision.
    pipe = V1ModelPipeline(compile_text(PARSED_META_PROGRAM, "t.p4"), clock_us=StepClock())
    assert pipe.decisions is not None and "meta.low" in pipe.decisions.key_paths
    ports = []
    for src in ("02:00:00:00:00:03", "02:00:00:00:00:05", "02:00:00:00:00:03"):
        frame = bytes(Ether(src=src, dst="02:00:00:00:00:01", type=0x88B5) / (b"x" * 50))
        res = pipe.ingress(1, frame)
        ports.append([item.port for item in res.queued])
    assert ports == [[3], [5], [3]]
    assert pipe.decisions.hits == 1


def test_only_code_ingress_runs_marks_passes(fabric) -> None:
    # egress reads registers and random numbers on every packet: its code
    # need not mark the pass (never cached), ingress's must
    source = _fabric(fabric).compiled.source
    body = source[source.index("def blk"):]
    blocks = {}
    for chunk in body.split("\ndef ")[1:]:
        name = chunk.split("(")[0]
        blocks[name] = chunk
    egress = next(text for name, text in blocks.items() if name.endswith("_FabricEgress"))
    ingress = next(text for name, text in blocks.items() if name.endswith("_FabricIngress"))
    assert "_values[" in egress  # it reads a register
    assert "nocache" not in egress and "bumps" not in egress
    assert "nocache" in ingress and "bumps" in ingress


def test_a_table_write_changes_the_next_packets_decision(fabric) -> None:
    pipe = _fabric(fabric)
    frame = roce(dst="10.0.0.2")
    assert [o.port for o in pipe.process(2, frame).outputs] == [1]
    assert [o.port for o in pipe.process(2, frame).outputs] == [1]
    assert pipe.decisions.hits == 1
    routes = pipe.table("FabricIngress.routes")
    key = routes.canonical_key([(0x0A000002, 32)])
    routes.delete(key)  # table write
    assert pipe.process(2, frame).dropped == 1
    routes.insert(routes.make_indirect_entry(key, member=3))
    assert [o.port for o in pipe.process(2, frame).outputs] == [3]
    # An action-profile write (the group the /24 uses)
    flow = roce(dst="10.0.1.9")
    first = pipe.process(1, flow).outputs[0].port
    other = 5 - first  # members 2 and 3 go to ports 2 and 3
    pipe.table("FabricIngress.routes").profile.set_group(10, [other])
    assert [o.port for o in pipe.process(1, flow).outputs] == [other]
    # A default-action write (classify: every packet to priority 5)
    classify = pipe.table("FabricIngress.classify")
    assert pipe.process(1, flow).outputs[0].priority == 3
    classify.set_default(classify.make_entry("FabricIngress.set_priority", [5], hit=False))
    flow0 = roce(dst="10.0.1.9", dscp=0)
    assert pipe.process(1, flow0).outputs[0].priority == 5


def test_forget_runs_on_p4runtime_writes(fabric) -> None:
    from emulator.targets.p4runtime import entities

    class Ctx:
        pipeline = _fabric(fabric)

    pipe = Ctx.pipeline
    pipe.process(1, roce())
    assert pipe.decisions.entries
    with pytest.raises(Exception):  # even a write that fails forgets
        entities.write(Ctx, entities.p4runtime_pb2.Update(type=1), None)  # type: ignore[arg-type]
    assert not pipe.decisions.entries


REG_PROGRAM = v1switch(decls="register<bit<32>>(4) r;", ingress="""
    apply {
        bit<32> v;
        if (hdr.eth.type == 0x0001) {
            r.read(v, 0);
            r.write(0, v + 1);
            hdr.eth.src = (bit<48>)v;
        }
        sm.egress_spec = 1;
    }""")

RANDOM_PROGRAM = v1switch(ingress="""
    apply {
        bit<16> x;
        random(x, 0, 1000);
        hdr.eth.src = (bit<48>)x;
        sm.egress_spec = 1;
    }""")

TIME_PROGRAM = v1switch(ingress="""
    apply {
        hdr.eth.src = sm.ingress_global_timestamp;
        sm.egress_spec = 1;
    }""")

COUNTER_PROGRAM = v1switch(ingress="""
    counter(8, CounterType.packets_and_bytes) c;
    direct_counter(CounterType.packets_and_bytes) dc;
    action fwd(bit<9> p) { sm.egress_spec = p; dc.count(); }
    table t { key = { hdr.eth.dst: exact; } actions = { fwd; NoAction; } counters = dc; }
    apply {
        c.count((bit<32>)hdr.eth.type[2:0]);
        t.apply();
        hdr.eth.dst = hdr.eth.dst + 1;
    }""")


def _frame(eth_type: int, dst: int = 0x0A, body: bytes = b"x" * 20) -> bytes:
    return dst.to_bytes(6, "big") + b"\x00" * 6 + eth_type.to_bytes(2, "big") + body


def test_a_pass_that_reads_a_register_is_never_cached() -> None:
    pipe = V1ModelPipeline(compile_text(REG_PROGRAM, "t.p4"), clock_us=StepClock())
    srcs = [pipe.process(0, _frame(0x0001)).outputs[0].data[6:12] for _ in range(3)]
    assert [int.from_bytes(s, "big") for s in srcs] == [0, 1, 2]
    assert not pipe.decisions.entries and pipe.registers["r"].values[0] == 3
    # The other path touches no register: cached.
    for _ in range(2):
        pipe.process(0, _frame(0x0002))
    assert pipe.decisions.hits == 1


@pytest.mark.parametrize("text", [RANDOM_PROGRAM, TIME_PROGRAM])
def test_random_and_timestamps_are_never_cached(text: str) -> None:
    def outs(cached: bool) -> list[bytes]:
        pipe = V1ModelPipeline(compile_text(text, "t.p4"), seed=5, clock_us=StepClock())
        if not cached:
            pipe.decisions = None
        got = [pipe.process(0, _frame(0x0800)).outputs[0].data for _ in range(4)]
        if cached:
            assert pipe.decisions.hits == 0 and not pipe.decisions.entries
        return got

    got = outs(True)
    assert got == outs(False) and len(set(got)) == 4


def test_counters_and_direct_counters_are_replayed_on_hits() -> None:
    def build(cached: bool) -> V1ModelPipeline:
        pipe = V1ModelPipeline(compile_text(COUNTER_PROGRAM, "t.p4"), clock_us=StepClock())
        if not cached:
            pipe.decisions = None
        t = pipe.table("I.t")
        t.insert(t.make_entry("I.fwd", [2], t.canonical_key([0x0A])))
        return pipe

    cached, plain = build(True), build(False)
    frames = [_frame(0x0800 + i % 3, dst=0x0A + i % 2, body=b"y" * (20 + i)) for i in range(12)]
    assert [cached.process(0, f).outputs[0].data for f in frames] == \
        [plain.process(0, f).outputs[0].data for f in frames]
    assert cached.decisions.hits == 12 - 6
    assert cached.counters["I.c"].packets == plain.counters["I.c"].packets
    assert cached.counters["I.c"].bytes == plain.counters["I.c"].bytes
    key = cached.table("I.t").canonical_key([0x0A])
    e1, e2 = cached.table("I.t").find(key), plain.table("I.t").find(key)
    assert (e1.packets, e1.bytes) == (e2.packets, e2.bytes) == (6, sum(34 + i for i in range(0, 12, 2)))


STACK_PROGRAM = v1switch(headers="header tag_t { bit<8> v; }\nstruct headers { eth_t eth; tag_t[2] tags; }",
                         ingress="apply { hdr.tags[0].v = 1; sm.egress_spec = 1; }")

FUNCTION_PROGRAM = v1switch(decls="""
    bit<48> stamp(in standard_metadata_t s) { return s.ingress_global_timestamp; }""",
                            ingress="apply { hdr.eth.src = stamp(sm); sm.egress_spec = 1; }")


@pytest.mark.parametrize("text,why", [(STACK_PROGRAM, "stack"),
                                      (FUNCTION_PROGRAM, "in a function")])
def test_programs_the_cache_cannot_key_run_without_it(text: str, why: str) -> None:
    pipe = V1ModelPipeline(compile_text(text, "t.p4"), clock_us=StepClock())
    assert pipe.decisions is None and why in pipe.cache_off_reason
    outs = {pipe.process(0, _frame(0x0800)).outputs[0].data for _ in range(3)}
    # the stamp differs packet by packet; the stack program's output does not
    assert len(outs) == (3 if why == "in a function" else 1)
