"""A server's scale-up switch timed inside its agent (live runs;
:mod:`emulator.traffic.agent.scale_up`), on a virtual clock: a lone message
takes serialisation at both ends at the scale-up rate plus the hop latency,
several GPUs sending to one queue at the receiver's port (contention), and
nothing is lost."""

from __future__ import annotations

import pytest

from emulator.traffic.agent.agent import Agent
from emulator.traffic.agent.cli import scale_up_switch
from emulator.traffic.agent.config import parse_config
from emulator.traffic.agent.sim import SimClock

RATE_BPS = 100e6  # a scale-up rate slowed down, as a live run has it
HOP_S = 20e-6
MTU = 1024
SIZE = 64 * MTU
SAME_AGENT = 0x800000  # the responder's QP number inside one agent (emulator.run.qps)


def _config(senders: list[int], receiver: int = 0) -> dict:
    nics = [{"name": f"srv0-eth{4 + g}", "ip": f"10.128.0.{g + 1}",
             "mac": f"02:00:0a:80:00:{g + 1:02x}", "gateway_mac": f"02:01:00:09:00:{g + 1:02x}",
             "line_rate_bps": RATE_BPS, "scale_up_hop_s": HOP_S} for g in range(4)]
    qps, messages = [], []
    for n, g in enumerate(senders):
        qpn = 0x100 + n
        qps.append({"qpn": qpn, "nic": f"srv0-eth{4 + g}", "remote_ip": f"10.128.0.{receiver + 1}",
                    "remote_qpn": qpn | SAME_AGENT})
        qps.append({"qpn": qpn | SAME_AGENT, "nic": f"srv0-eth{4 + receiver}",
                    "remote_ip": f"10.128.0.{g + 1}", "remote_qpn": qpn})
        messages.append({"qp": qpn, "size_bytes": SIZE})
    return {"name": "srv0", "nics": nics, "qps": qps, "workload": {"messages": messages},
            "defaults": {"transport": {"path_mtu_bytes": MTU}}}


def _run(senders: list[int]):
    config = parse_config(_config(senders))
    clock = SimClock()
    backends: dict = {}
    switch = scale_up_switch(config, backends, clock)
    assert switch is not None and set(backends) == {n.name for n in config.nics}
    agent = Agent(config, backends, clock.now)
    switch.attach(agent.timers.schedule, agent.on_frame)
    agent.service(0.0)
    while len(agent.log.received) < len(senders) or len(agent.log.sent) < len(senders) \
            or any(r.get("acked_at") is None for r in agent.log.sent):
        t = agent.next_wakeup()
        assert t < 10.0, "the messages never completed"
        clock.now = max(clock.now, t)
        agent.service(clock.now)
    return agent, switch


def _frame_bytes(agent: Agent, nic: int) -> tuple[int, int]:
    """(bytes of the data frames NIC ``nic`` sent, bytes of the last of them):
    RoCEv2 WRITE frames of 58 B of headers, the first with a 16 B RETH."""
    wire = agent.nics[nic].counters.tx_bytes
    assert wire == SIZE + (SIZE // MTU) * 58 + 16
    return wire, MTU + 58


def test_a_lone_message_is_serialised_at_both_ends_plus_the_hop():
    agent, switch = _run([1])
    wire, frame = _frame_bytes(agent, 1)
    (got,) = agent.log.received
    # the first frame (the longest: its RETH) at the sender's port, then every
    # frame back to back at the switch's egress (store and forward), and the hop
    expected = (frame + 16) * 8 / RATE_BPS + wire * 8 / RATE_BPS + HOP_S
    print(f"\nlone {SIZE} B over the in-agent scale-up switch: {got['last_at'] * 1e3:.4f} ms "
          f"[virtual], frame arithmetic {expected * 1e3:.4f} ms")
    assert got["last_at"] == pytest.approx(expected, rel=1e-6)
    # a frame waits for the egress only behind the longer first frame: 16 B
    assert switch.dropped == 0 and switch.max_wait_s == pytest.approx(16 * 8 / RATE_BPS)
    assert switch.forwarded == 64 + agent.nics[0].counters.tx_packets  # data and its ACKs


def test_three_gpus_sending_to_one_share_its_port():
    agent, switch = _run([1, 2, 3])
    wire, frame = _frame_bytes(agent, 1)
    last = max(r["last_at"] for r in agent.log.received)
    # the receiver's port carries all three messages back to back after the first frame
    expected = (frame + 16) * 8 / RATE_BPS + 3 * wire * 8 / RATE_BPS + HOP_S
    print(f"\n3 x {SIZE} B to one GPU: last byte at {last * 1e3:.4f} ms [virtual], "
          f"its port's arithmetic {expected * 1e3:.4f} ms")
    assert last == pytest.approx(expected, rel=0.01)
    assert switch.max_wait_s > wire * 8 / RATE_BPS  # frames queued for the shared port
    assert switch.dropped == 0
