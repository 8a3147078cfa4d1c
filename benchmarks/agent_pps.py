"""Frames per second of the host NIC agent, and CPU microseconds per frame.

Two figures, never a verdict:

**sim** (no root): the agent's own code on the virtual-time harness
(:class:`~emulator.traffic.agent.sim.SimNetwork`), measured as
``emulator.budget.calibrate`` does: one RDMA WRITE of ``size`` between
two agents on a 100 Gb/s wire, DCQCN on, path MTU 1024 and 4096 bytes;
the process CPU time of the whole run (``time.process_time``, the least of
``--repeats`` runs: other work on the machine only adds to it) divided by
the data packets and by two (sender and receiver each handle every
packet; ACKs are included in the cost, not in the count). ``kfps`` is
1000 / ``us_per_frame``: the frames per second one agent could handle if
I/O were free.

**live** (root only): two agent processes (``python -m
emulator.traffic.agent``, as the runner starts them) in two network
namespaces ``afxbench-<pid>-a``/``-b`` joined by a veth pair (deleted in a
``finally``), a 10 Gb/s line so the agents, not the pacer, set the pace;
the sender writes ``--live-mb`` MB messages back to back for
``--seconds``. ``fps`` is the sender NIC's transmitted frames (its
``tx_packets`` counter, data and ACKs it sent) per wall second of the
window; ``sender_us_per_frame`` / ``receiver_us_per_frame`` are each
process's CPU time (user + system, from ``/proc/<pid>/stat``) over the
window per frame it sent or received there. One run per transmit mode:
``send`` (one ``send()`` syscall per frame) and ``ring`` (a PACKET_MMAP TX
ring flushed once per service pass, :mod:`emulator.traffic.agent.txring`).
Before them, **tx**: the transmit path alone in a's namespace,
``RawNic.send()`` of one WRITE MIDDLE-sized frame 8000 times with a
``flush()`` every 32 or 256 frames, plain ``send()`` against the ring, CPU
time (``time.process_time``, least of 5) of the send calls and of the
flushes. ``load_average`` is the machine's 1-minute load when the run
began: on a busy machine CPU time per frame grows too (shared caches and
cores), so compare figures taken at similar loads.

Run from the repository root::

    .venv/bin/python benchmarks/agent_pps.py [--sizes 64KB,2MB] [--seconds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulator.scenario.units import parse_size_bytes  # noqa: E402
from emulator.traffic.agent.config import parse_config  # noqa: E402
from emulator.traffic.agent.sim import SimNetwork  # noqa: E402

MTUS = (1024, 4096)
IPS = {"a": "10.0.0.1", "b": "10.0.0.2"}
MACS = {"a": "02:00:00:00:00:01", "b": "02:00:00:00:00:02"}
QPN = 17


def host(name: str, peer: str, mtu: int, messages: list, *, line_rate_bps: float = 100e9,
         gateway_mac: str = "02:00:00:00:ff:01", run: dict | None = None) -> dict:
    return {"name": name,
            "nics": [{"name": "eth0", "ip": IPS[name], "mac": MACS[name],
                      "gateway_mac": gateway_mac, "line_rate_bps": line_rate_bps,
                      "mtu_bytes": mtu + 100}],
            "qps": [{"qpn": QPN, "nic": "eth0", "remote_ip": IPS[peer], "remote_qpn": QPN,
                     "dcqcn": {"enabled": True}}],
            "defaults": {"transport": {"path_mtu_bytes": mtu}},
            "workload": {"messages": messages}, "run": run or {}}


def sim_once(size_bytes: int, mtu: int) -> tuple[float, int]:
    """(CPU seconds, data packets) of one WRITE between two sim agents."""
    net = SimNetwork()
    net.add_agent(parse_config(host("a", "b", mtu, [{"qp": QPN, "size_bytes": size_bytes}])))
    net.add_agent(parse_config(host("b", "a", mtu, [])))
    net.connect(("a", "eth0"), ("b", "eth0"), delay_s=1e-6)
    sender = net.agents["a"].qps[QPN]
    start = time.process_time()
    net.run(10.0, stop_when=lambda: sender.counters.messages_completed >= 1)
    elapsed = time.process_time() - start
    if sender.counters.messages_completed != 1:
        raise RuntimeError(f"the {size_bytes} B WRITE did not complete")
    return elapsed, sender.counters.packets_sent


def sim_rows(sizes: list[int], repeats: int) -> list[dict]:
    rows = []
    for mtu in MTUS:
        for size in sizes:
            runs = [sim_once(size, mtu) for _ in range(repeats)]
            cpu_s, packets = min(runs)
            us = cpu_s / packets / 2 * 1e6
            rows.append({"mtu_bytes": mtu, "size_bytes": size, "data_packets": packets,
                         "us_per_frame": round(us, 2), "kfps": round(1e3 / us, 1)})
    return rows


# -- live: two agent processes on a veth pair ----------------------------------------

def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=20).stdout


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def link_packets(ns: str) -> tuple[int, int]:
    """(tx, rx) packets of eth0 in namespace ``ns``."""
    stats = json.loads(sh("ip", "-n", ns, "-s", "-j", "link", "show", "eth0"))[0]["stats64"]
    return stats["tx"]["packets"], stats["rx"]["packets"]


class VethPair:
    """Namespaces ``afxbench-<pid>-a``/``-b``, eth0 in each, joined by a veth."""

    def __init__(self) -> None:
        self.ns = {h: f"afxbench-{os.getpid()}-{h}" for h in ("a", "b")}
        self.created: list[str] = []

    def __enter__(self) -> "VethPair":
        try:
            for h, ns in self.ns.items():
                sh("ip", "netns", "add", ns)
                self.created.append(ns)
            tag = f"afxb{os.getpid() % 100000}"
            sh("ip", "link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b")
            for h, ns in self.ns.items():
                sh("ip", "link", "set", f"{tag}{h}", "netns", ns, "name", "eth0")
                sh("ip", "-n", ns, "link", "set", "eth0", "address", MACS[h], "mtu", "9000")
                sh("ip", "-n", ns, "addr", "add", f"{IPS[h]}/24", "dev", "eth0")
                sh("ip", "-n", ns, "link", "set", "eth0", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for ns in self.created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
        self.created.clear()


def live_run(pair: VethPair, workdir: Path, mtu: int, tx_mode: str, seconds: float,
             message_bytes: int) -> dict:
    """One live run: a sends ``message_bytes`` WRITEs to b back to back."""
    procs: dict[str, subprocess.Popen] = {}
    run = {"tx_ring": True} if tx_mode == "ring" else {}
    messages = [{"qp": QPN, "size_bytes": message_bytes, "count": 1_000_000,
                 "interval_s": message_bytes * 8 / 10e9}]
    configs = {"a": host("a", "b", mtu, messages, line_rate_bps=10e9,
                         gateway_mac=MACS["b"], run=run),
               "b": host("b", "a", mtu, [], line_rate_bps=10e9, gateway_mac=MACS["a"], run=run)}
    try:
        for h in ("b", "a"):
            path = workdir / f"{h}-{tx_mode}-{mtu}.json"
            path.write_text(json.dumps(configs[h]))
            procs[h] = subprocess.Popen(
                ["ip", "netns", "exec", pair.ns[h], sys.executable, "-m",
                 "emulator.traffic.agent", "--config", str(path), "--stats",
                 str(workdir / f"{h}-{tx_mode}-{mtu}-stats.json")],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = procs[h].stdout.readline()
            if '"ready"' not in line:
                raise RuntimeError(f"agent {h} did not start: {procs[h].stderr.read()}")
        time.sleep(0.5)  # warm up: the first messages, caches
        cpu0 = {h: cpu_seconds(p.pid) for h, p in procs.items()}
        pk0 = {h: link_packets(pair.ns[h]) for h in procs}
        w0 = time.monotonic()
        time.sleep(seconds)
        cpu1 = {h: cpu_seconds(p.pid) for h, p in procs.items()}
        pk1 = {h: link_packets(pair.ns[h]) for h in procs}
        wall = time.monotonic() - w0
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
    stats = json.loads((workdir / f"a-{tx_mode}-{mtu}-stats.json").read_text())
    nic = stats["nics"][0]["counters"]
    a_tx = pk1["a"][0] - pk0["a"][0]
    b_rx = pk1["b"][1] - pk0["b"][1]
    a_cpu = cpu1["a"] - cpu0["a"]
    b_cpu = cpu1["b"] - cpu0["b"]
    return {"tx_batch": tx_mode, "mtu_bytes": mtu, "seconds": round(wall, 2),
            "fps": round(a_tx / wall), "receiver_fps": round(b_rx / wall),
            "sender_us_per_frame": round(a_cpu / a_tx * 1e6, 2) if a_tx else None,
            "receiver_us_per_frame": round(b_cpu / b_rx * 1e6, 2) if b_rx else None,
            "sender_cpu_percent": round(100 * a_cpu / wall, 1),
            "receiver_cpu_percent": round(100 * b_cpu / wall, 1),
            "tx_errors": nic["tx_errors"], "tx_batching": stats["nics"][0].get("tx_batching"),
            "retransmit_packets": stats["qps"][0]["counters"]["retransmit_packets"]}


# The transmit path alone, run inside the namespace: RawNic.send() of one
# frame ``FRAMES`` times in flushes of ``batch``, CPU time of the send calls
# and of the flushes apart (the least of 5).
TX_PATH = r"""
import json, sys, time
from emulator.traffic.agent.backends import RawNic
iface, size, batch, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = {}
for mode in sys.argv[5].split(","):
    best = None
    for _ in range(5):
        ring = {"tx_ring": True} if mode == "ring" else {}
        nic = RawNic(iface, swallow_udp=False, max_frame_bytes=9100, **ring)
        frame = bytes(size)
        t_send = t_flush = 0.0
        for _ in range(frames // batch):
            t0 = time.process_time()
            for _ in range(batch):
                nic.send(frame)
            t1 = time.process_time()
            if ring:
                nic.flush()
            t_flush += time.process_time() - t1
            t_send += t1 - t0
        stats = nic.tx_stats() if hasattr(nic, "tx_stats") else {"mode": "send"}
        nic.close()
        n = frames // batch * batch
        row = {"tx_batch": stats["mode"], "frame_bytes": size, "flush_every": batch,
               "us_per_frame": round((t_send + t_flush) / n * 1e6, 2),
               "send_call_us": round(t_send / n * 1e6, 2),
               "flush_us": round(t_flush / n * 1e6, 2)}
        if best is None or row["us_per_frame"] < best["us_per_frame"]:
            best = row
    out[mode] = best
print(json.dumps(out))
"""


def tx_rows(pair: VethPair, modes: list[str], frames: int = 8000) -> list[dict]:
    """Transmit CPU per frame, ``send()`` against the ring, on a's eth0 (b
    has no reader: the kernel drops the frames after the veth)."""
    rows = []
    for size in (1086, 4158):   # a full WRITE MIDDLE at MTU 1024 and 4096
        for batch in (32, 256):
            out = subprocess.run(
                ["ip", "netns", "exec", pair.ns["a"], sys.executable, "-c", TX_PATH, "eth0",
                 str(size), str(batch), str(frames), ",".join(modes)], cwd=ROOT,
                capture_output=True, text=True,
                timeout=120)
            if out.returncode:
                raise RuntimeError(f"tx path: {out.stderr.strip()}")
            rows.extend(json.loads(out.stdout).values())
    return rows


def live_rows(seconds: float, message_bytes: int, modes: list[str]) -> dict:
    rows = []
    with VethPair() as pair, tempfile.TemporaryDirectory(prefix="afxbench-") as tmp:
        tx = tx_rows(pair, modes)
        for mtu in MTUS:
            for mode in modes:
                rows.append(live_run(pair, Path(tmp), mtu, mode, seconds, message_bytes))
    return {"tx": tx, "agents": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="64KB,2MB,8MB", help="WRITE sizes of the sim figure")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="live measuring window")
    parser.add_argument("--live-mb", type=float, default=1.0, help="live message size, MB")
    parser.add_argument("--modes", default="send,ring", help="live transmit modes")
    parser.add_argument("--no-live", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load = float(Path("/proc/loadavg").read_text().split()[0])
    out: dict = {"load_average": load, "clock": "process CPU time",
                 "sim": sim_rows([parse_size_bytes(s) for s in args.sizes.split(",")],
                                 args.repeats)}
    if args.no_live:
        out["live"] = None
    elif os.geteuid() != 0:
        out["live"] = "skipped: needs root (network namespaces, veth)"
    else:
        out["live"] = live_rows(args.seconds, int(args.live_mb * 1e6), args.modes.split(","))
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"load average {load}; CPU time (least of {args.repeats} for sim)")
    print("sim: agent code on the virtual-time harness")
    for r in out["sim"]:
        print(f"  mtu {r['mtu_bytes']:5d}  {r['size_bytes']:>9d} B  {r['us_per_frame']:6.2f} "
              f"us/frame  {r['kfps']:7.1f} k frames/s")
    if isinstance(out["live"], dict):
        print("tx: RawNic.send() then flush(), per frame (CPU time, least of 5)")
        for r in out["live"]["tx"]:
            print(f"  {r['frame_bytes']:5d} B  flush every {r['flush_every']:3d}  "
                  f"{r['tx_batch']:5s} {r['us_per_frame']:6.2f} us  (send calls "
                  f"{r['send_call_us']} us, flushes {r['flush_us']} us)")
        print("live: two agents on a veth pair (CPU from /proc, per frame)")
        for r in out["live"]["agents"]:
            print(f"  mtu {r['mtu_bytes']:5d}  {r['tx_batch']:5s} {r['fps']:8d} frames/s  "
                  f"sender {r['sender_us_per_frame']} us  receiver "
                  f"{r['receiver_us_per_frame']} us  (cpu {r['sender_cpu_percent']}% / "
                  f"{r['receiver_cpu_percent']}%, tx_errors {r['tx_errors']}, "
                  f"retx {r['retransmit_packets']})")
    elif out["live"]:
        print(f"live: {out['live']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
