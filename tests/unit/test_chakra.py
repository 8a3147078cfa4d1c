"""Chakra ET traces: the wire format round trip, errors, and a trace written from a
training step that evaluates to the same iteration as the step itself."""

from dataclasses import replace

import pytest

from emulator.scenario.chakra import (COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE,
                                      ALL_REDUCE, ALL_TO_ALL, ChakraError, TraceNode, read_trace,
                                      trace_graph, write_trace)
from emulator.scenario.jobs_graph import FabricCost, TrainingJob, build_step, evaluate
from emulator.scenario.jobs_model import Gpu, ModelShape


def test_round_trip_keeps_fields_and_attributes(tmp_path):
    nodes = [TraceNode(1, "mm", COMP_NODE, (), 1500, {"is_cpu_op": False}),
             TraceNode(7, "ar", COMM_COLL_NODE, (1,), 0,
                       {"comm_type": ALL_REDUCE, "comm_size": 2**40, "pg_name": "dp"})]
    write_trace(tmp_path / "r0.et", nodes)
    version, back = read_trace(tmp_path / "r0.et")
    assert version == "0.0.4"
    assert back == nodes


def test_a_byte_layout_from_the_field_numbers(tmp_path):
    # by hand: metadata {version "v"}; node {id 3, type COMP 4, data_deps [1], duration 9}
    meta = bytes([0x0A, 1]) + b"v"
    node = bytes([0x08, 3, 0x18, 4, 0x28, 1, 0x38, 9])
    (tmp_path / "t.et").write_bytes(bytes([len(meta)]) + meta + bytes([len(node)]) + node)
    version, nodes = read_trace(tmp_path / "t.et")
    assert version == "v"
    assert nodes == [TraceNode(3, "", COMP_NODE, (1,), 9, {})]


def test_bad_files_are_one_line_errors(tmp_path):
    (tmp_path / "a.et").write_bytes(b"")
    with pytest.raises(ChakraError, match="a.et: empty"):
        read_trace(tmp_path / "a.et")
    (tmp_path / "b.et").write_bytes(bytes([50, 1, 2]))
    with pytest.raises(ChakraError, match="b.et: byte 0: message of 50 B"):
        read_trace(tmp_path / "b.et")
    (tmp_path / "c.et").write_bytes(bytes([2, 0x0F, 0x01]))  # wire type 7 does not exist
    with pytest.raises(ChakraError, match="c.et: not a Chakra ET file"):
        read_trace(tmp_path / "c.et")
    with pytest.raises(ChakraError, match="depends on unknown node 9"):
        trace_graph([[TraceNode(1, "x", COMP_NODE, (9,), 1, {})]])
    with pytest.raises(ChakraError, match="no SEND from rank 1"):
        trace_graph([[TraceNode(1, "x", COMM_RECV_NODE, (), 0, {"comm_src": 1})]])


def step_to_traces(nodes):
    """The tests' writer: one trace per pipeline stage of a step graph, order made explicit as
    dependencies, PP transfers as SEND on the sender and RECV on the receiver."""
    count = {}
    placed = []
    waited = {}  # graph node id -> trace id its dependants (on its receiving rank) wait for
    for node in nodes:  # pass 1: trace ids
        if node.kind == "pp":
            src, dst = map(int, node.id.split("/")[1][1:].split(">"))
        else:
            src = dst = int(node.stream.lstrip("sdp"))
        count[src] = count.get(src, 0) + 1
        tid = count[src]
        rid = None
        if node.kind == "pp":
            count[dst] = count.get(dst, 0) + 1
            rid = count[dst]
        waited[node.id] = rid or tid
        placed.append((node, src, dst, tid, rid))
    ranks = {r: [] for r in count}
    last_on = {}
    for node, src, dst, tid, rid in placed:  # pass 2: nodes
        deps = [waited[d] for d in node.deps]
        if node.stream in last_on:
            deps.append(last_on[node.stream])
        last_on[node.stream] = tid
        if node.kind == "compute":
            ranks[src].append(TraceNode(tid, node.id, COMP_NODE, tuple(deps),
                                        round(node.duration_s * 1e6), {}))
        elif node.kind == "pp":
            attrs = {"comm_dst": dst, "comm_tag": tid, "comm_size": node.size_bytes}
            ranks[src].append(TraceNode(tid, node.id, COMM_SEND_NODE, tuple(deps), 0, attrs))
            ranks[dst].append(TraceNode(rid, node.id + "/recv", COMM_RECV_NODE, (), 0,
                                        {"comm_src": src, "comm_tag": tid}))
        else:
            ranks[src].append(TraceNode(tid, node.id, COMM_COLL_NODE, tuple(deps), 0,
                                        {"comm_type": ALL_TO_ALL if node.kind == "ep"
                                         else ALL_REDUCE,
                                         "comm_size": node.size_bytes,
                                         # one communicator per stage's group
                                         "pg_name": ("edp" if "/e" in node.id
                                                     else node.kind) + str(src)}))
    return [ranks[r] for r in sorted(ranks)]


def test_trace_of_a_step_matches_the_step(tmp_path):
    model = ModelShape(layers=4, hidden=1024, heads=8, kv_heads=8, ffn=4096, vocab=1000,
                       experts=4, top_k=2)
    job = TrainingJob(model, Gpu(1e14, 0.5), seq=512, micro_batch=1, global_batch=16,
                      tp=2, pp=2, dp=4, ep=2, bucket_bytes=2**22)
    # Chakra holds whole microseconds of compute: the step in those units
    step = [replace(n, duration_s=round(n.duration_s * 1e6) * 1e-6) for n in build_step(job)]
    traces = step_to_traces(step)
    assert len(traces) == 2
    paths = []
    for r, nodes in enumerate(traces):
        paths.append(tmp_path / f"rank{r}.et")
        write_trace(paths[-1], nodes)
    read = [read_trace(p)[1] for p in paths]
    graph = trace_graph(read, groups={f"{pg}{r}": n for r in (0, 1) for pg, n in
                                      (("tp", 2), ("dp", 4), ("ep", 2), ("edp", 2))})
    for cost in (FabricCost(rate_bps=100e9, latency_s=2e-6), FabricCost(rate_bps=5e9)):
        want, got = evaluate(step, cost), evaluate(graph, cost)
        assert got.iteration_s == pytest.approx(want.iteration_s, rel=1e-9)
        assert got.compute_s == pytest.approx(want.compute_s, rel=1e-9)
        for kind in ("pp", "dp", "ep"):
            assert got.exposed_s[kind] == pytest.approx(want.exposed_s[kind], rel=1e-6, abs=1e-9)
    kinds = {n.kind for n in graph}
    assert {"compute", "pp", "dp", "ep", "tp"} <= kinds
    assert {n.group for n in graph if n.kind == "dp"} == {4, 2}  # dense, and expert gradients
