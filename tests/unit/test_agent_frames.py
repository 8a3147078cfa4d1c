"""The agent's prebuilt frames (:mod:`emulator.traffic.agent.frames`) are the
bytes :class:`~emulator.traffic.roce.RoceFlow` builds, ICRC included, and a
whole run of two agents puts the same bytes on the wire as before the
templates (digests taken with the field-by-field builder, main at 8b59f9f)."""

from __future__ import annotations

import hashlib
import random
import zlib

import pytest

from emulator.traffic.agent.config import parse_config
from emulator.traffic.agent.frames import QpFrames, crc_tables
from emulator.traffic.agent.sim import SimNetwork, mark_ce
from emulator.traffic.layers import opcodes as op
from emulator.traffic.layers.aeth import NAK_PSN_SEQUENCE_ERROR, ack_syndrome, nak_syndrome
from emulator.traffic.layers.icrc import icrc_ok
from emulator.traffic.roce import ECN_ECT0, ECN_NOT_ECT, RoceFlow
from tests.unit.test_agent_support import host_config

REQUESTS = (op.RC_RDMA_WRITE_FIRST, op.RC_RDMA_WRITE_MIDDLE, op.RC_RDMA_WRITE_LAST,
            op.RC_RDMA_WRITE_ONLY, op.RC_SEND_FIRST, op.RC_SEND_MIDDLE, op.RC_SEND_LAST,
            op.RC_SEND_ONLY)
DEST_QP = 0x123456


def flows(dscp: int = 26) -> tuple[RoceFlow, RoceFlow, RoceFlow]:
    args = ("02:00:00:00:00:01", "02:00:00:00:ff:01", "10.0.0.1", "10.0.0.2", 0xC011)
    return (RoceFlow(*args, dscp=dscp, ecn=ECN_ECT0), RoceFlow(*args, dscp=dscp, ecn=ECN_NOT_ECT),
            RoceFlow(*args, dscp=48, ecn=ECN_NOT_ECT))


def test_crc_tables_give_zlib_crc32_from_any_state():
    rng = random.Random(3)
    for n in (0, 4, 1024, 4096):
        tail = bytes(rng.randrange(256) for _ in range(n))
        t0, t1, t2, t3, c = crc_tables(tail)
        for _ in range(50):
            v = rng.randrange(1 << 32)
            assert c ^ t0[v & 255] ^ t1[v >> 8 & 255] ^ t2[v >> 16 & 255] ^ t3[v >> 24] \
                == zlib.crc32(tail, v)


@pytest.mark.parametrize("mtu", [256, 1024, 4096])
def test_data_ack_and_cnp_frames_are_roceflow_bytes(mtu):
    data, ack, cnp = flows()
    frames = QpFrames(data, ack, cnp, DEST_QP, mtu, va=0x1122334455667788, rkey=0xDEADBEEF)
    rng = random.Random(mtu)
    for _ in range(400):
        opcode = rng.choice(REQUESTS)
        plen = rng.choice([mtu, rng.randrange(mtu + 1)])
        psn, ack_req, dma_len = rng.randrange(1 << 24), rng.random() < 0.5, rng.randrange(1 << 32)
        reth = (frames.va, frames.rkey, dma_len) \
            if opcode in (op.RC_RDMA_WRITE_FIRST, op.RC_RDMA_WRITE_ONLY) else None
        got = frames.data(opcode, psn, plen, ack_req, dma_len)
        assert got == data.packet(opcode, DEST_QP, psn, bytes(plen), reth=reth, ack_req=ack_req)
        assert icrc_ok(got)
        psn, msn = rng.randrange(1 << 24), rng.randrange(1 << 24)
        syndrome = rng.choice([ack_syndrome(), nak_syndrome(NAK_PSN_SEQUENCE_ERROR)])
        assert frames.ack(psn, msn, syndrome) == ack.ack(DEST_QP, psn, msn, syndrome)
    assert frames.cnp_frame == cnp.cnp(DEST_QP)


def test_the_shape_cache_is_bounded():
    frames = QpFrames(*flows(), DEST_QP, 4096)
    data = flows()[0]
    for plen in range(0, 4096, 8):
        assert frames.data(op.RC_SEND_LAST, 7, plen, True) == \
            data.packet(op.RC_SEND_LAST, DEST_QP, 7, bytes(plen), ack_req=True)
    assert len(frames._shapes) <= 256


def test_opcodes_with_other_extended_headers_are_refused():
    frames = QpFrames(*flows(), DEST_QP, 1024)
    with pytest.raises(ValueError, match="RETH"):
        frames.data(op.RC_SEND_ONLY_WITH_IMMEDIATE, 0, 8, False)


def _wire_digest(mtu: int) -> tuple[int, int, int, int, str]:
    """Two agents, losses and CE marks on the wire, PSNs that wrap: every
    frame both sent, hashed in order."""
    seen = [0]

    def hook(frame: bytes, _src: str, _dst: str) -> bytes | None:
        seen[0] += 1
        if seen[0] % 37 == 0:
            return None
        if seen[0] % 11 == 0 and frame[42] <= 0x10:
            return mark_ce(frame)
        return frame

    sizes = [(5000, "write"), (3000, "send"), (0, "write"), (1024, "write"), (0, "send"),
             (70000, "write"), (4097, "send")]
    msgs = [{"qp": 0x11, "size_bytes": s, "op": kind, "at_s": i * 0.001}
            for i, (s, kind) in enumerate(sizes)]
    transport = {"transport": {"path_mtu_bytes": mtu}}
    net = SimNetwork()
    net.add_agent(parse_config(host_config(
        "a", rate_bps=1e9, nic={"mtu_bytes": 9000}, messages=msgs,
        qp={**transport, "start_psn": 0xFFFFF0, "rkey": 0x1234, "remote_va": 0xABCDEF})))
    net.add_agent(parse_config(host_config(
        "b", rate_bps=1e9, nic={"mtu_bytes": 9000},
        qp={**transport, "remote_start_psn": 0xFFFFF0})))
    net.connect(("a", "eth0"), ("b", "eth0"), delay_s=20e-6, hook=hook)
    net.run(2.0)
    digest = hashlib.sha256()
    count = 0
    for host in ("a", "b"):
        for _t, frame in net.fakes[(host, "eth0")].sent:
            digest.update(frame)
            count += 1
    c = net.agents["a"].qps[0x11].counters
    return (count, c.messages_completed, c.retransmit_packets,
            net.agents["b"].qps[0x22].counters.cnps_sent, digest.hexdigest())


@pytest.mark.parametrize("mtu,expected", [
    (256, (424, 7, 55, 3, "7d9c42b27e3cf0112f300154f57dfc611507a17dc570e6ef775367bcab3bbeaa")),
    (1024, (108, 7, 8, 2, "423b945e6626ea3fcba0c7667dae3d124332197cc26ae3abfc50dab2331b6081")),
    (4096, (35, 7, 0, 1, "fefa331e86cbd4f2eadf08bb291c945b247bd8f3d7651341aee92bb2edecece9")),
])
def test_a_run_puts_the_same_bytes_on_the_wire_as_the_field_by_field_builder(mtu, expected):
    assert _wire_digest(mtu) == expected
