"""A scenario with ``capture: {ports: [leaf-r0-0:*, srv1/gpu0]}`` on the
quickstart fabric (root, built-in target): one pcap per port of the leaf and
one of the GPU's NIC (tcpdump in its namespace) under ``pcaps/``, at most
``max_packets`` each, and ``aifabric inspect`` decodes RoCE packets with a
valid ICRC from them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.measure.inspect import inspect_pcap
from tests.root.host_noise import skip_if_the_host_stalled

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
MAX_PACKETS = 300


def _scenario(tmp_path: Path) -> Path:
    text = (REPO / "scenarios" / "quickstart.yaml").read_text()
    topo = (REPO / "topologies" / "quickstart.yaml").resolve()
    text = re.sub(r"(?m)^topology:.*$", f"topology: {topo}", text)
    text = re.sub(r"(?m)^name:.*$", "name: quickstart-capture", text)
    text += f"\ncapture:\n  ports: ['leaf-r0-0:*', srv1/gpu0]\n  max_packets: {MAX_PACKETS}\n"
    path = tmp_path / "capture.yaml"
    path.write_text(text)
    return path


def test_capture_quickstart(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    for attempt in range(2):  # quickstart checks it kept up: the VM's host may cost a run that
        out = tmp_path / f"run{attempt}"
        proc = subprocess.run([sys.executable, "-m", "emulator.cli.main", "run",
                               str(scenario), "--out", str(out), "--no-progress"],
                              cwd=REPO, capture_output=True, text=True, timeout=300)
        results = json.loads((out / "results.json").read_text()) \
            if (out / "results.json").exists() else {}
        if proc.returncode == 0 or results.get("fidelity", {}).get("faithful", True):
            break
    skip_if_the_host_stalled(results, "quickstart with captures")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert results["errors"] == []
    captures = results["captures"]
    gpu = captures.pop("srv1/gpu0")
    assert gpu["file"] == "pcaps/srv1-gpu0.pcap" and gpu["packets"] == MAX_PACKETS
    gpu_recs = list(inspect_pcap(out / gpu["file"]))
    assert len(gpu_recs) == MAX_PACKETS
    # f-rail0 arrives at srv1/gpu0: its WRITEs, with valid ICRC, and the NIC's ACKs back
    data = [r for r in gpu_recs if r.kind == "roce" and "WRITE" in r.fields["opcode_name"]]
    assert data and all(r.fields["icrc_ok"] for r in data)
    pcaps = sorted((out / "pcaps").glob("leaf-*.pcap"))
    assert pcaps and {p.name for p in pcaps} == {
        f"leaf-r0-0-p{point.split(':')[1]}.pcap" for point in captures}
    assert all(p.name.startswith("leaf-r0-0-p") for p in pcaps)
    assert not (out / "fabric" / "net" / "pcap").exists()
    roce_ok = 0
    for pcap in pcaps:
        recs = list(inspect_pcap(pcap))
        assert len(recs) <= MAX_PACKETS
        assert captures[f"leaf-r0-0:{pcap.stem.rsplit('-p', 1)[1]}"]["packets"] == len(recs)
        times = [r.time for r in recs]
        assert times == sorted(times)
        roce = [r for r in recs if r.kind == "roce"]
        assert all(r.fields["icrc_ok"] for r in roce)
        roce_ok += len(roce)
    assert roce_ok > 0
    # the busiest port hits the limit: f-rail0 alone is ~1000 frames through the leaf
    assert any(c["truncated"] and c["packets"] == MAX_PACKETS for c in captures.values())
    busiest = max(pcaps, key=lambda p: p.stat().st_size)
    cli = subprocess.run([sys.executable, "-m", "emulator.cli.main", "inspect", str(busiest),
                          "--only", "roce", "--limit", "20"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert len(lines) == 20
    assert all(" RoCE " in line and "icrc=ok" in line and "qp=0x" in line for line in lines)
    assert any("RC_RDMA_WRITE" in line or "RC_ACKNOWLEDGE" in line for line in lines)
