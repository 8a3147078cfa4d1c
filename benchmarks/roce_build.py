"""Packets per second: RoCEv2 frames built and parsed by the fast path vs Scapy.

Prints figures, passes or fails nothing. Run from the repository root:

    .venv/bin/python benchmarks/roce_build.py [--seconds 0.5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from scapy.compat import raw
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from emulator.traffic.layers import opcodes as op
from emulator.traffic.layers.icrc import icrc_ok
from emulator.traffic.layers.reth import RETH
from emulator.traffic.roce import RoceFlow, parse, roce_packet

MAC_A, MAC_B = "02:00:00:00:00:01", "02:00:00:00:00:02"
IP_A, IP_B = "10.0.0.1", "10.0.0.2"
SPORT = 0xC350


def rate(fn: Callable[[int], object], seconds: float) -> float:
    """Calls per second of ``fn(i)`` over about ``seconds``."""
    n, batch = 0, 16
    start = time.perf_counter()
    while True:
        for i in range(n, n + batch):
            fn(i)
        n += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed
        batch = min(batch * 2, 4096)


def scapy_write(payload: bytes, first: bool, psn: int) -> bytes:
    bth = BTH(opcode=op.RC_RDMA_WRITE_FIRST if first else op.RC_RDMA_WRITE_MIDDLE,
              dqpn=0x1234, psn=psn & 0xFFFFFF)
    pkt = (Ether(src=MAC_A, dst=MAC_B) / IP(src=IP_A, dst=IP_B, tos=0x6A, id=0, flags="DF")
           / UDP(sport=SPORT, chksum=0) / bth)
    if first:
        pkt = pkt / RETH(va=0x1000, rkey=0xABC, dma_len=1 << 20)
    return raw(pkt / Raw(payload))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    args = parser.parse_args()
    secs = args.seconds
    flow = RoceFlow(MAC_A, MAC_B, IP_A, IP_B, SPORT)
    rows: list[tuple[str, float]] = []
    for size in (64, 1024, 4096):
        payload = bytes(size)
        assert flow.packet(op.RC_RDMA_WRITE_FIRST, 0x1234, 5, payload,
                           reth=(0x1000, 0xABC, 1 << 20)) == scapy_write(payload, True, 5)
        rows += [
            (f"scapy   WRITE_FIRST  {size:5d} B",
             rate(lambda i: scapy_write(payload, True, i), secs)),
            (f"scapy   WRITE_MIDDLE {size:5d} B",
             rate(lambda i: scapy_write(payload, False, i), secs)),
            (f"fast    roce_packet() WRITE_FIRST {size:5d} B",
             rate(lambda i: roce_packet(MAC_A, MAC_B, IP_A, IP_B, SPORT, op.RC_RDMA_WRITE_FIRST,
                                        0x1234, i & 0xFFFFFF, payload,
                                        reth=(0x1000, 0xABC, 1 << 20)), secs)),
            (f"fast    RoceFlow.packet WRITE_FIRST  {size:5d} B",
             rate(lambda i: flow.packet(op.RC_RDMA_WRITE_FIRST, 0x1234, i & 0xFFFFFF, payload,
                                        reth=(0x1000, 0xABC, 1 << 20)), secs)),
            (f"fast    RoceFlow.packet WRITE_MIDDLE {size:5d} B",
             rate(lambda i: flow.packet(op.RC_RDMA_WRITE_MIDDLE, 0x1234, i & 0xFFFFFF,
                                        payload), secs)),
        ]
    rows += [
        ("fast    RoceFlow.ack",
         rate(lambda i: flow.ack(0x1234, i & 0xFFFFFF, i & 0xFFFFFF), secs)),
        ("fast    RoceFlow.cnp", rate(lambda i: flow.cnp(0x1234), secs)),
    ]
    frame = flow.packet(op.RC_RDMA_WRITE_FIRST, 0x1234, 5, bytes(1024), reth=(0x1000, 0xABC, 4096))
    rows += [
        ("parse   1024 B, ICRC checked", rate(lambda i: parse(frame), secs)),
        ("parse   1024 B, ICRC skipped", rate(lambda i: parse(frame, check_icrc=False), secs)),
        ("icrc_ok 1024 B", rate(lambda i: icrc_ok(frame), secs)),
        ("scapy   Ether(frame) 1024 B", rate(lambda i: Ether(frame), secs)),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'what':<{width}}  packets/s")
    for name, per_s in rows:
        print(f"{name:<{width}}  {per_s:>11,.0f}")


if __name__ == "__main__":
    main()
