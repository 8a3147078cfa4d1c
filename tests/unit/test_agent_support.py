"""Helpers of the agent tests (configs of two hosts on one wire), and tests
of the virtual-time harness itself."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.traffic.agent.config import parse_config
from emulator.traffic.agent.sim import SimNetwork, mark_ce
from emulator.traffic.roce import ECN_CE, ECN_ECT0, RoceFlow, parse

MAC = {"a": "02:00:00:00:00:0a", "b": "02:00:00:00:00:0b"}
IP = {"a": "10.0.0.1", "b": "10.0.0.2"}
RATE_BPS = 10e6
QPN = {"a": 0x11, "b": 0x22}


def host_config(name: str, *, rate_bps: float = RATE_BPS, messages: list[dict] = (),
                qp: dict[str, Any] | None = None, nic: dict[str, Any] | None = None,
                extra_qps: list[dict] = (), **top: Any) -> dict[str, Any]:
    """JSON config of host ``name`` ("a" or "b"), one NIC wired to the other host."""
    peer = "b" if name == "a" else "a"
    nic_cfg = {"name": "eth0", "ip": IP[name], "mac": MAC[name], "gateway_mac": MAC[peer],
               "line_rate_bps": rate_bps, **(nic or {})}
    qp_cfg = {"qpn": QPN[name], "nic": "eth0", "remote_ip": IP[peer], "remote_qpn": QPN[peer],
              **(qp or {})}
    return {"name": name, "nics": [nic_cfg], "qps": [qp_cfg, *extra_qps],
            "workload": {"messages": list(messages)}, **top}


def pair(*, a: dict[str, Any] | None = None, b: dict[str, Any] | None = None,
         delay_s: float = 50e-6, hook=None) -> SimNetwork:
    """Hosts a and b on one wire of ``delay_s``; ``a``/``b``: host_config kwargs."""
    net = SimNetwork()
    net.add_agent(parse_config(host_config("a", **(a or {}))))
    net.add_agent(parse_config(host_config("b", **(b or {}))))
    net.connect(("a", "eth0"), ("b", "eth0"), delay_s=delay_s, hook=hook)
    return net


def data_frames(net: SimNetwork, host: str = "a") -> list[tuple[float, Any]]:
    """(time, RoceView) of the data packets ``host`` sent (ACKs and CNPs left out)."""
    out = []
    for t, frame in net.fakes[(host, "eth0")].sent:
        view = parse(frame)
        if view.opcode <= 0x10:
            out.append((t, view))
    return out


def write_frame(psn: int, *, ecn: int = ECN_ECT0, payload: bytes = bytes(64),
                ack_req: bool = False, opcode: int = 0x0A) -> bytes:
    """A WRITE ONLY from a's QP to b's QP, as a would send it."""
    flow = RoceFlow(MAC["a"], MAC["b"], IP["a"], IP["b"], 0xC000 | QPN["a"], ecn=ecn)
    reth = (0, 0, len(payload)) if opcode in (0x06, 0x0A) else None
    return flow.packet(opcode, QPN["b"], psn, payload, reth=reth, ack_req=ack_req)


def test_pair_delivers_after_the_wire_delay():
    net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": 100}]}, delay_s=1e-3)
    net.run(0.01)
    sent = net.fakes[("a", "eth0")].sent
    acks = net.fakes[("b", "eth0")].sent
    assert len(sent) == 1 and len(acks) == 1
    # 100 B + headers at 10 Mb/s from t=0, then 1 ms each way
    assert acks[0][0] == pytest.approx(1e-3)
    rec = net.agents["a"].log.sent[0]
    assert rec["acked_at"] == pytest.approx(2e-3)


def test_runs_are_repeatable():
    def run() -> list[float]:
        net = pair(a={"messages": [{"qp": QPN["a"], "size_bytes": 50_000}]})
        net.run(0.2)
        return [t for t, _ in net.fakes[("a", "eth0")].sent]
    assert run() == run()


def test_mark_ce_sets_ce_and_keeps_the_frame_valid():
    frame = write_frame(5)
    marked = mark_ce(frame)
    view = parse(marked)
    assert view.ecn == ECN_CE and view.icrc_ok and view.psn == 5
    header = marked[14:34]
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, 20, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    assert total == 0xFFFF  # IPv4 header checksum still right
