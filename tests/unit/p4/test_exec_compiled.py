"""The compiled executor (emulator.p4.exec.compiled): the same generated code
built with Cython gives the same packets, drops, digests, logs, registers
and counters as the Python executor, on fabric.p4 and on a program made of
what C integers could get wrong (tests/unit/p4/compiled_kit.py); switches
sharing one built module keep their own state; a module that cannot be built
leaves the pipeline on Python, saying why in one line."""

from __future__ import annotations

import random
import struct
import sys
import sysconfig
from pathlib import Path

import pytest

from emulator.p4.exec import compiled
from emulator.p4.exec.externs import Csum16Packed, csum16
from emulator.p4.exec.pipeline import QueueInfo, V1ModelPipeline
from emulator.p4.frontend import compile_file, compile_text
from emulator.speedups.toolchain import missing
from tests.unit.p4.compiled_kit import observe, packets, pipeline, state
from tests.unit.p4.conformance_kit import ETH_HDR, StepClock, v1switch
from tests.unit.p4.test_conformance_externs import FLAG_INGRESS, IP_FIELDS, IP_PARSER, IPV4
from tests.unit.p4.test_exec_decisions import _fabric, _mixed_frames, roce

FABRIC = Path(__file__).resolve().parents[3] / "p4src" / "fabric.p4"


pytestmark = pytest.mark.skipif(missing() is not None,
                                reason=f"cannot build extensions here: {missing()} "
                                       "(make setup installs them)")


@pytest.fixture(scope="module")
def fabric():
    return compile_file(FABRIC)


def _fabric_on(program, executor: str) -> V1ModelPipeline:
    pipe = _fabric(program, executor=executor)
    assert pipe.executor == executor, pipe.executor_note
    return pipe


def test_fabric_p4_forwards_marks_and_counts_the_same(fabric):
    frames = _mixed_frames() + [(port, roce(sport=0xC000 + i % 40, psn=i, size=60 + i % 900,
                                           ttl=(1, 2, 64)[i % 3], dst=f"10.0.{i % 3}.{i % 9}"))
                                for i, port in enumerate([1, 2, 3] * 200)]
    seen = {}
    for executor in ("python", "cython"):
        pipe = _fabric_on(fabric, executor)
        out = []
        for i, (port, frame) in enumerate(frames):
            res = pipe.ingress(port, frame)
            for item in res.queued:  # egress with queue depths around the ECN thresholds
                eg = pipe.egress(item, QueueInfo(enq_qdepth=i % 30, deq_qdepth=i % 7,
                                                 enq_timestamp_us=float(i)))
                out.append([(o.port, o.data, o.priority, o.instance_type) for o in eg.outputs])
            out.append((res.dropped, len(res.queued)))
        counters = {name: (list(c.packets), list(c.bytes)) for name, c in pipe.counters.items()}
        seen[executor] = (out, counters, pipe.decisions.hits, pipe.decisions.misses)
    assert seen["cython"] == seen["python"]
    assert seen["python"][2] > 250  # the decision cache was used (and replayed counters)


def test_what_c_integers_could_get_wrong_comes_out_the_same():
    frames = packets(700)
    python, cython = pipeline("python"), pipeline("cython")
    assert cython.executor == "cython", cython.executor_note
    for port, frame in frames:
        assert observe(cython, port, frame) == observe(python, port, frame), frame.hex()
    assert state(cython) == state(python)
    outcomes = [observe(python, port, frame) for port, frame in frames[:200]]
    # the program's branches were reached: drops, digests, logs, several copies
    assert any(o[1] for o in outcomes) and any(o[2] for o in outcomes)
    assert any(o[3] for o in outcomes) and any(len(o[0]) > 1 for o in outcomes)


def test_switches_sharing_a_module_keep_their_own_state(fabric):
    cache: dict = {}
    a = V1ModelPipeline(fabric, seed=1, clock_us=StepClock(), types_cache=cache, executor="cython")
    b = _fabric(fabric, executor="cython")  # the same module, its own tables
    assert a.executor == b.executor == "cython"
    assert type(a._Frame) is type(b._Frame)
    assert a.compiled.namespace["bind"] is b.compiled.namespace["bind"]
    frame = roce(dst="10.0.0.2")
    assert a.process(2, frame).dropped == 1           # a has no routes
    assert [o.port for o in b.process(2, frame).outputs] == [1]
    drops = lambda p: sum(p.counters["FabricIngress.drop_counter"].packets)  # noqa: E731
    rx = lambda p: sum(p.counters["FabricIngress.rx_counter"].packets)  # noqa: E731
    assert (drops(a), drops(b), rx(a), rx(b)) == (1, 0, 1, 1)


def test_a_program_that_cannot_be_built_runs_on_python(fabric, monkeypatch):
    def refuse(source: str, label: str = "") -> None:
        raise compiled.Unavailable("Cython is not installed (pip install cython)")
    monkeypatch.setattr(compiled, "load", refuse)
    pipe = V1ModelPipeline(fabric, seed=3, clock_us=StepClock(), executor="cython")
    assert pipe.executor == "python"
    assert pipe.executor_note == "Cython is not installed (pip install cython)"
    assert pipe.process(1, roce()).dropped == 1  # no routes: the Python code runs


def test_a_build_error_is_one_line_naming_the_kept_source(tmp_path, monkeypatch):
    monkeypatch.setenv("AIFABRIC_CACHE", str(tmp_path))
    source = "def broken(:\n    pass\n"
    with pytest.raises(compiled.Unavailable) as exc:
        compiled.load(source, "broken.p4")
    message = str(exc.value)
    assert "\n" not in message
    kept = tmp_path / "p4-cython" / f"{compiled.module_name(source)}.pyx"
    assert message.startswith(f"Cython failed on broken.p4: {kept}:1:"), message
    assert kept.read_text() == source  # the source the error points into
    assert not list((tmp_path / "p4-cython").glob("*.build-*"))  # no build folder left


def test_the_c_checksum_is_the_python_one(fabric):
    pipe = V1ModelPipeline(fabric, seed=3, clock_us=StepClock(), executor="cython")
    c_csum16 = pipe.compiled.namespace["_c_csum16"]
    rng = random.Random(4)
    cases = [b"", b"\x00", b"\xff", b"\xff\xff", b"\xff\xff" * 9, b"\x00\x00\xff\xff"]
    cases += [bytes(rng.choice([0, 0xFF, rng.randrange(256)]) for _ in range(n))
              for n in list(range(1, 64)) * 20 + [1500, 9000]]
    for data in cases:
        assert c_csum16(data) == csum16(data), data.hex()



def test_a_checksum_of_packed_fields_is_taken_in_c_as_python_takes_it():
    """Compiled, verify_checksum and update_checksum over a field list take
    the checksum in one C function (externs.Csum16Packed), no bytes between;
    what ingress sees of the verify (sm.checksum_error) and the checksum
    egress writes are Python's, for right, wrong and all-ones checksums and
    for a packet without the header (the checksum of no bytes)."""
    assert Csum16Packed(">HHI")(0x4500, 0xFFFF, 7) == csum16(struct.pack(">HHI", 0x4500, 0xFFFF, 7))
    text = v1switch(
        headers=IPV4, parser=IP_PARSER,
        verify=f"apply {{ verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5, {IP_FIELDS}, "
               "hdr.ipv4.hdrChecksum, HashAlgorithm.csum16); }",
        ingress=FLAG_INGRESS,
        compute=f"apply {{ update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl != 6, {IP_FIELDS}, "
                "hdr.ipv4.hdrChecksum, HashAlgorithm.csum16); }")
    program = compile_text(text, "csum.p4")
    pipes = {ex: V1ModelPipeline(program, seed=1, clock_us=StepClock(), executor=ex)
             for ex in ("python", "cython")}
    assert pipes["cython"].executor == "cython", pipes["cython"].executor_note
    source = pipes["cython"].compiled.source
    assert "hash_csum16(" not in source.split("def bind(")[1]  # (both sums fused)
    assert "return _csum16_at(b, 18)" in source  # (the header but its checksum)
    rng = random.Random(9)
    eth = bytes.fromhex(ETH_HDR + "0800")
    seen = {"python": [], "cython": []}
    for i in range(400):
        ip = bytearray(rng.randbytes(20))
        ip[0] = rng.choice([0x45, 0x46, 0x4F, rng.randrange(256)])
        kind = i % 4
        if kind < 2:  # right: the checksum of the header with it zeroed
            ip[10:12] = b"\0\0"
            ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
        elif kind == 2:  # all ones in every field a sum folds
            ip = bytearray(b"\xff" * 20)
        frame = eth + bytes(ip) if i % 9 else eth[:13]  # (a runt: no IPv4 header)
        for ex, pipe in pipes.items():
            seen[ex].append([o.data for o in pipe.process(i % 4, frame).outputs])
    assert seen["cython"] == seen["python"]
    flags = [out[0][34] for out in seen["python"] if out and len(out[0]) > 34]
    assert 0 in flags and 1 in flags  # verified right and wrong both



def test_a_cached_pass_writes_back_c_integers_and_wider_values_as_python_does():
    """A decision-cache entry keeps what ingress wrote in the compiled
    writer's form (_DcValues: C integers in a C array, a 128-bit value as
    it is); replaying it gives Python's packets, for narrow and wide fields."""
    text = v1switch(
        headers="header w_t { bit<128> big; bit<8> small; bit<48> mac; }\n"
                "struct headers { eth_t eth; w_t w; }",
        parser="""parser P(packet_in pkt, out headers hdr, inout metadata meta,
                           inout standard_metadata_t sm) {
            state start { pkt.extract(hdr.eth); pkt.extract(hdr.w); transition accept; }
        }""",
        ingress="""apply {
            sm.egress_spec = (bit<9>)hdr.w.small & 3;
            hdr.w.big = hdr.w.big ^ (hdr.w.big << 64) ^ 0xF0000000000000000000000000000001;
            hdr.w.small = hdr.w.small + 1;
            hdr.w.mac = hdr.w.mac - 1;
        }""")
    program = compile_text(text, "wide.p4")
    pipes = {ex: V1ModelPipeline(program, seed=1, clock_us=StepClock(), executor=ex)
             for ex in ("python", "cython")}
    cached = pipes["cython"]
    assert cached.executor == "cython" and cached.decisions is not None, cached.cache_off_reason
    rng = random.Random(2)
    flows = [rng.randbytes(16) + bytes([rng.randrange(256)]) + rng.choice([b"\0" * 6, b"\xff" * 6,
                                                                           rng.randbytes(6)])
             for _ in range(12)]
    eth = bytes.fromhex(ETH_HDR + "88b5")
    for i in range(96):
        frame = eth + flows[i % 12] + rng.randbytes(i % 5)
        outs = [[(o.port, o.data) for o in p.process(1, frame).outputs] for p in pipes.values()]
        assert outs[0] == outs[1], frame.hex()
    assert cached.decisions.hits == 96 - 12
    ns = cached.compiled.namespace
    for write, values, _, _ in cached.decisions.entries.values():
        assert type(write) is ns["_DcWriter"] and type(values) is ns["_DcValues"]
    with pytest.raises(ValueError):
        write.pack(())  # an entry's values, one per field written



@pytest.mark.parametrize("middle", ["", "v_t v;"])
def test_headers_past_the_deparser_scratch_or_after_a_varbit_leave_as_python_emits_them(middle):
    """The compiled deparser writes C headers into the frame's scratch (no
    bytes object each) and falls back to a list past its 256 bytes or once
    something else is emitted (a varbit header): the packets leave with
    Python's bytes either way, in place or in a new frame."""
    names = [f"h{i}" for i in range(24)]  # 24 x 16 bytes: past the scratch
    middle_extract = "pkt.extract(hdr.v, (bit<32>)hdr.h0.a[3:0] * 8);" if middle else ""
    text = v1switch(
        decls="header h_t { bit<64> a; bit<64> b; }\nheader v_t { varbit<120> x; }\n",
        headers="struct headers { eth_t eth; h_t h0; " + middle + " "
                + " ".join(f"h_t {n};" for n in names[1:]) + " }",
        parser="""parser P(packet_in pkt, out headers hdr, inout metadata meta,
                           inout standard_metadata_t sm) {
            state start { pkt.extract(hdr.eth); pkt.extract(hdr.h0); """ + middle_extract + " "
               + " ".join(f"pkt.extract(hdr.{n});" for n in names[1:]) + """ transition accept; }
        }""",
        ingress="""apply {
            sm.egress_spec = 1;
            hdr.h7.b = hdr.h7.b + 1;
            hdr.h23.a = hdr.h0.a ^ hdr.h23.a;
            if (hdr.h0.b == 0) { hdr.h12.setInvalid(); }
        }""",
        deparser="apply { pkt.emit(hdr.eth); pkt.emit(hdr.h0); " + ("pkt.emit(hdr.v); " if middle else "")
                 + " ".join(f"pkt.emit(hdr.{n});" for n in names[1:]) + " }")
    program = compile_text(text, "deep.p4")
    pipes = {ex: V1ModelPipeline(program, seed=1, clock_us=StepClock(), executor=ex)
             for ex in ("python", "cython")}
    assert pipes["cython"].executor == "cython", pipes["cython"].executor_note
    code = pipes["cython"].compiled.source.split("def bind(")[1]
    assert code.count("_ec_H_h_t") == 24 and code.count("_ec_H_eth_t") == 1  # (each emit in C)
    rng = random.Random(5)
    eth = bytes.fromhex(ETH_HDR + "88b5")
    for i in range(60):
        h0 = bytearray(rng.randbytes(16))
        if i % 3 == 0:
            h0[8:16] = bytes(8)  # h0.b == 0: h12 not emitted
        var = rng.randbytes((h0[7] & 15)) if middle else b""
        frame = eth + bytes(h0) + var + rng.randbytes(16 * 23 + rng.randrange(40))
        outs = [[o.data for o in p.process(0, frame).outputs] for p in pipes.values()]
        assert outs[0] == outs[1] and outs[0], frame.hex()


def test_a_built_module_is_kept_and_loaded_again(tmp_path, monkeypatch):
    monkeypatch.setenv("AIFABRIC_CACHE", str(tmp_path))
    source = f"def answer():\n    return {random.randrange(1 << 30)}\n"  # a module of its own
    module = compiled.load(source, "tiny")
    built = list((tmp_path / "p4-cython").glob("aifabric_p4_*"))
    assert len(built) == 1 and built[0].name.endswith(sysconfig.get_config_var("EXT_SUFFIX"))
    assert compiled.load(source, "tiny") is module  # loaded once per process
    monkeypatch.delitem(__import__("sys").modules, module.__name__)

    def no_build(*args: object) -> None:
        raise AssertionError("built again")
    monkeypatch.setattr(compiled, "_build", no_build)
    again = compiled.load(source, "tiny")  # from the cache folder
    assert again.answer() == module.answer()


def test_a_cache_folder_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("AIFABRIC_CACHE", str(blocked))
    with pytest.raises(compiled.Unavailable) as exc:
        compiled.load(f"x = {random.randrange(1 << 30)}\n", "tiny")
    assert str(exc.value).startswith(f"cannot build in {blocked}/p4-cython: ")
    assert "\n" not in str(exc.value)


def test_every_compile_of_a_program_writes_the_same_module(monkeypatch):
    """The module is built once per text: a text that depended on where
    objects live (the order of a set of ids) would be built again by many
    runs and ranks."""
    names: list[str] = []

    def name_only(source: str, label: str = "") -> None:
        names.append(compiled.module_name(source))
        raise compiled.Unavailable("only the name")
    monkeypatch.setattr(compiled, "load", name_only)
    ballast = []
    for i in range(12):  # the program's objects at other addresses each time
        ballast.append([object() for _ in range(i * 37)])
        V1ModelPipeline(compile_file(FABRIC), executor="cython")
    assert len(names) == 12 and len(set(names)) == 1, set(names)


def test_a_build_removes_modules_not_loaded_for_a_month(tmp_path, monkeypatch):
    import os
    import time
    monkeypatch.setenv("AIFABRIC_CACHE", str(tmp_path))
    folder = tmp_path / "p4-cython"
    folder.mkdir()
    stale, recent = folder / "aifabric_p4_old.so", folder / "aifabric_p4_recent.so"
    for path, age_days in ((stale, 31), (recent, 29)):
        path.write_bytes(b"")
        then = time.time() - age_days * 86400
        os.utime(path, (then, then))
    compiled.load(f"x = {random.randrange(1 << 30)}\n", "tiny")
    assert not stale.exists() and recent.exists()


def test_the_compiled_decision_key_packs_each_field_in_its_width(fabric):
    """The key is each keyed field's value in its width's bytes (a 48-bit
    MAC: six), so a change in any byte of any field gives another key; a
    value wider than its field (which no packet gives) falls back to eight
    bytes a field, a key of another length, so never a packed one's twin."""
    pipe = _fabric_on(fabric, "cython")
    cache = pipe.decisions
    ns = pipe.compiled.namespace
    assert cache.read_key is ns["_dc_read_key"]
    pipe.ingress(1, roce())  # a miss: the key of a parsed RoCE packet stored
    (key,) = cache.entries
    assert isinstance(key, bytes) and len(key) < 8 * len(cache.key_paths)
    assert len(key) == 42  # fabric.p4's 22 keyed fields, 1 to 6 bytes each
    before = len(cache.entries)
    for dst in ("10.0.1.8", "10.1.1.7", "11.0.1.7"):  # each byte of the address
        pipe.ingress(1, roce(dst=dst))
    for sport in (0xC001, 0xC100):  # both bytes of a 16-bit port
        pipe.ingress(1, roce(sport=sport))
    assert len(cache.entries) == before + 5 and cache.hits == 0
    pipe.ingress(1, roce())
    assert cache.hits == 1  # the same packet again: the same key
    f = ns["mk_packet"](ns["PacketContext"](100, 0.0, None))
    assert len(cache.read_key(f)) == 42
    f.sm.ingress_port = 1 << 16  # wider than bit<9>'s two bytes
    wide = cache.read_key(f)
    assert len(wide) == 8 * 22 and wide[-8:] == (1 << 16).to_bytes(8, sys.byteorder)


def test_the_compiled_module_returns_the_result_classes_the_data_plane_reads(fabric,
                                                                             monkeypatch):
    """Where the speedups group runs compiled, a program's module cimports
    .results, so what ingress and egress return are the classes the
    compiled data plane reads in C, and its text names that build (a new
    build of the group builds the module anew); where the group runs as
    Python the module has result classes of its own."""
    from emulator.p4.exec import results

    key = compiled.shared_results_key()
    pipe = _fabric_on(fabric, "cython")
    res = pipe.ingress(1, roce())
    (item,) = res.queued
    (out,) = pipe.egress(item, QueueInfo(enq_qdepth=3)).outputs
    if key is not None:
        assert type(res) is results.ProcessResult and type(item) is results.EgressItem
        assert type(out) is results.Output and len(out.data) == len(roce())
    sources: dict[str | None, str] = {}

    def text_only(source: str, label: str = "") -> None:
        sources[compiled.shared_results_key()] = source
        raise compiled.Unavailable("only the text")
    monkeypatch.setattr(compiled, "load", text_only)
    for shared in (None, "0123456789abcdef0123"):
        monkeypatch.setattr(compiled, "shared_results_key", lambda shared=shared: shared)
        V1ModelPipeline(fabric, executor="cython")
    own, shared_text = sources[None], sources["0123456789abcdef0123"]
    assert "cdef class ProcessResult" in own and "cimport EgressItem" not in own
    assert "cdef class ProcessResult" not in shared_text
    assert "from emulator.p4.exec.results cimport EgressItem, Output, ProcessResult, " \
           "QueueInfo" in shared_text
    assert "speedups 0123456789abcdef0123" in shared_text and "q.enq_qdepth" in shared_text


def test_a_frame_egress_is_done_with_is_made_anew_and_reused(fabric):
    """The compiled egress gives a unicast packet's frame back once it has
    left, where nothing else refers to it or to anything in it: the item
    lets go of it and the next packet gets it, made as new (the outputs
    the same as the Python executor's, as the test above checks over
    hundreds of packets). A frame someone still holds is left alone."""
    pipe = _fabric_on(fabric, "cython")
    ns = pipe.compiled.namespace
    fresh = ns["mk_packet"](ns["PacketContext"](100, 0.0, None))
    ids = []
    for psn in range(3):
        (item,) = pipe.ingress(1, roce(psn=psn, ttl=9 + psn)).queued
        ids.append(id(item.pkt))
        (out,) = pipe.egress(item, QueueInfo(enq_qdepth=3)).outputs
        assert item.pkt is None and out.data[22] == 8 + psn  # (the TTL, one hop less)
    assert ids[1] == ids[2]
    reused = ns["mk_packet"](ns["PacketContext"](100, 0.0, None))
    assert id(reused) == ids[2]
    for part in ("hdr.ethernet", "hdr.ipv4", "hdr.udp", "hdr.bth", "meta", "sm"):
        a, b = fresh, reused
        for name in part.split("."):
            a, b = getattr(a, name), getattr(b, name)
        assert a._eq(b), part
    assert not reused.hdr.ipv4._v and reused.hdr.ipv4.ttl == 0 and reused.sm.ingress_port == 0
    assert reused.meta.flow_hash == 0 and reused.pkt_in is None and reused.pkt_out is None
    (item,) = pipe.ingress(1, roce()).queued
    held = item.pkt  # someone still holds the frame: egress leaves it
    pipe.egress(item, QueueInfo())
    assert item.pkt is held and held.hdr.ipv4._v


def test_a_frame_nobody_else_holds_gets_its_headers_rewritten_in_place(fabric):
    """The compiled egress writes a unicast packet's headers over the ones
    it came in with, in the frame it came in (no new frame, no copy of the
    payload), only where the packet's context alone holds that frame; a
    frame anyone else holds is never written to: the packet leaves in a
    new one and the held frame reads as before. Both leave the same bytes
    as the Python executor."""
    compiled_pipe, python_pipe = _fabric_on(fabric, "cython"), _fabric_on(fabric, "python")
    frame = roce(psn=7, ttl=20, size=900)
    kept = bytes(frame)  # an equal copy, to compare against
    (item,) = compiled_pipe.ingress(1, frame).queued
    (out,) = compiled_pipe.egress(item, QueueInfo(enq_qdepth=3)).outputs
    (py_item,) = python_pipe.ingress(1, kept).queued
    (py_out,) = python_pipe.egress(py_item, QueueInfo(enq_qdepth=3)).outputs
    assert out.data == py_out.data and out.data[22] == 19  # (the TTL, one hop less)
    assert out.data is not frame and frame == kept  # held by the test: not written to
    for psn in range(3):  # held by nobody but the packet: the same frame goes out
        frame = roce(psn=psn, ttl=9, size=900)
        hash(frame)  # (a hash cached in the frame before: not one after)
        (item,) = compiled_pipe.ingress(1, frame).queued
        came_in = id(frame)
        del frame
        (out,) = compiled_pipe.egress(item, QueueInfo(enq_qdepth=3)).outputs
        assert id(out.data) == came_in and out.data[22] == 8
        assert out.data == _fabric_on_out(python_pipe, roce(psn=psn, ttl=9, size=900))
        assert hash(out.data) == hash(bytes(bytearray(out.data)))



def test_references_a_deliverer_lends_count_as_egress_own_and_no_more(fabric):
    """``QueueInfo.lent_refs``: references to the frame that whoever
    delivered it holds only to hand it over. With one lent and the test
    holding the frame once (as the engine does while a packet cuts through),
    egress writes in that frame; with one more holder, it does not."""
    pipe = _fabric_on(fabric, "cython")
    expected = _fabric_on_out(_fabric_on(fabric, "python"), roce(psn=5, ttl=9, size=900))
    frame = roce(psn=5, ttl=9, size=900)
    (item,) = pipe.ingress(1, frame).queued
    (out,) = pipe.egress(item, QueueInfo(enq_qdepth=3, lent_refs=1)).outputs
    assert out.data is frame and frame == expected  # (the lender reads it no more)
    frame = roce(psn=5, ttl=9, size=900)
    also = frame  # a holder besides the lender
    (item,) = pipe.ingress(1, frame).queued
    (out,) = pipe.egress(item, QueueInfo(enq_qdepth=3, lent_refs=1)).outputs
    assert out.data is not also and out.data == expected
    assert also == roce(psn=5, ttl=9, size=900)  # not written to


def _fabric_on_out(pipe: V1ModelPipeline, frame: bytes) -> bytes:
    (item,) = pipe.ingress(1, frame).queued
    (out,) = pipe.egress(item, QueueInfo(enq_qdepth=3)).outputs
    return out.data
