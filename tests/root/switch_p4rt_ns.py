"""Run inside a host namespace (``ip netns exec NS python switch_p4rt_ns.py ...``)
by ``test_switch_p4runtime.py``; sends with scapy on one interface.

    send IFACE HEX...                   sendp each frame once
    loop IFACE RATE_PPS SECONDS HEX...  send the frames round-robin at RATE_PPS
                                        for SECONDS (prints the count)
    junk IFACE COUNT SEED               COUNT truncated and random frames
                                        (prints the count sent)

Every mode is bounded in frames and time.
"""

from __future__ import annotations

import random
import sys
import time

from scapy.all import conf, sendp  # noqa: E402


def send(iface: str, frames: list[bytes]) -> None:
    sendp(frames, iface=iface, verbose=False)


def loop(iface: str, rate: float, seconds: float, frames: list[bytes]) -> None:
    sock = conf.L2socket(iface=iface)
    sent = 0
    start = time.monotonic()
    limit = int(rate * seconds) + 1
    try:
        while sent < limit:
            elapsed = time.monotonic() - start
            if elapsed >= seconds:
                break
            due = min(limit, int(elapsed * rate) + 1)
            while sent < due:
                sock.send(frames[sent % len(frames)])
                sent += 1
            time.sleep(min(0.005, 1.0 / rate))
    finally:
        sock.close()
    print(sent, flush=True)


def junk(iface: str, count: int, seed: int) -> None:
    rng = random.Random(seed)
    eth = bytes.fromhex("0000000001010800000001110800")  # to the switch, IPv4
    frames: list[bytes] = []
    # Truncated: Ethernet header only / cut inside it (padded by nobody), and
    # IPv4 headers cut at every length, with and without a plausible start.
    for cut in range(1, 14):
        frames.append(eth[:cut])
    ip = bytes.fromhex("450000540001000040110000") + bytes([10, 0, 1, 1, 10, 0, 2, 2])
    for cut in range(0, 20):
        frames.append(eth + ip[:cut])
    for cut in range(0, 20, 3):
        frames.append(eth + bytes([0x4F]) + ip[1:cut])         # IHL 15, options missing
    # Random: random EtherTypes, and IPv4 with random header bytes.
    while len(frames) < count:
        n = rng.randrange(14, 1515)
        body = bytes(rng.getrandbits(8) for _ in range(n))
        if rng.random() < 0.5:
            body = body[:12] + b"\x08\x00" + body[14:]
        frames.append(body)
    frames = frames[:count]
    sock = conf.L2socket(iface=iface)
    sent = 0
    try:
        for frame in frames:
            try:
                sock.send(frame)
                sent += 1
            except OSError:
                pass  # the kernel refuses some short frames; that is fine
    finally:
        sock.close()
    print(sent, flush=True)


def main(argv: list[str]) -> None:
    mode, iface, *rest = argv
    if mode == "send":
        send(iface, [bytes.fromhex(h) for h in rest])
    elif mode == "loop":
        loop(iface, float(rest[0]), float(rest[1]), [bytes.fromhex(h) for h in rest[2:]])
    elif mode == "junk":
        junk(iface, int(rest[0]), int(rest[1]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
