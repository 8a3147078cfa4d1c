"""p4src/fabric.p4 on a target without PFC in the MAC (BMv2): a received PFC
frame is counted, dropped and reported to the controller as a
``pfc_pause_t`` digest (emulator/control/bmv2_pfc.py acts on it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.l2 import Ether

from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.frontend import compile_file
from emulator.p4.p4info.from_ir import p4info_for

FABRIC = Path(__file__).resolve().parents[3] / "p4src" / "fabric.p4"
FIELDS = ["ingress_port", "class_enable"] + [f"time{i}" for i in range(8)]


@pytest.fixture(scope="module")
def program():
    return compile_file(FABRIC)


def pfc_frame(times: dict[int, int]) -> bytes:
    fields = {}
    for prio, quanta in times.items():
        fields[f"c{prio}_enabled"] = 1
        fields[f"c{prio}_pause_time"] = quanta
    return bytes(Ether(dst="01:80:c2:00:00:01", src="02:00:0a:00:00:02", type=0x8808)
                 / MACControlClassBasedFlowControl(**fields))


def test_a_pfc_frame_is_counted_dropped_and_digested(program):
    pipe = V1ModelPipeline(program)
    res = pipe.process(2, pfc_frame({3: 0xFFFF, 5: 7}))
    assert res.outputs == [] and res.dropped == 1
    (name, value), = res.digests
    assert name == "pfc_pause_t"
    got = {f: getattr(value, f) for f in FIELDS}
    assert got == {"ingress_port": 2, "class_enable": (1 << 3) | (1 << 5),
                   "time0": 0, "time1": 0, "time2": 0, "time3": 0xFFFF,
                   "time4": 0, "time5": 7, "time6": 0, "time7": 0}
    assert pipe.counters["FabricIngress.pfc_rx_counter"].packets[2 * 8] == 1


def test_an_xon_is_digested_with_zero_quanta(program):
    pipe = V1ModelPipeline(program)
    res = pipe.process(7, pfc_frame({3: 0}))
    (name, value), = res.digests
    assert (value.ingress_port, value.class_enable, value.time3) == (7, 1 << 3, 0)
    assert res.dropped == 1


def test_other_traffic_sends_no_digest(program):
    pipe = V1ModelPipeline(program)
    arp = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", type=0x0806) / (b"\x00" * 28))
    pause = bytes(Ether(dst="01:80:c2:00:00:01", type=0x8808)
                  / (b"\x00\x01" + b"\x00\x00" * 8 + b"\x00" * 26))   # 802.3x PAUSE, not PFC
    for frame in (arp, pause):
        assert pipe.process(1, frame).digests == []


def test_p4info_lists_the_digest(program):
    info = p4info_for(program)
    (digest,) = [d for d in info.digests if d.preamble.name == "pfc_pause_t"]
    assert digest.preamble.id >> 24 == 0x17
    assert digest.type_spec.struct.name == "pfc_pause_t"
    members = info.type_info.structs["pfc_pause_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == \
        list(zip(FIELDS, [9, 8] + [16] * 8))
