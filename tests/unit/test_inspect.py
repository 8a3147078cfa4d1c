"""``aifabric inspect`` and ``aifabric shell`` on synthetic captures (no root)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli.main import main
from emulator.cli.shell import build_namespace
from emulator.measure.inspect import decode_frame, format_line, inspect_pcap
from emulator.targets.builtin.pcap import PcapWriter
from emulator.traffic.layers import opcodes as op
from emulator.traffic.layers.pfc import pfc_frame
from emulator.traffic.roce import ack_packet, cnp_packet, roce_packet

REPO = Path(__file__).resolve().parents[2]
MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
IP_A, IP_B = "10.0.0.1", "10.0.0.2"


def _frames() -> list[bytes]:
    write = roce_packet(MAC_A, MAC_B, IP_A, IP_B, 0xC001, op.RC_RDMA_WRITE_FIRST, 0x11, 5,
                        b"x" * 64, reth=(0x1000, 7, 256), ack_req=True, ecn=3)
    bad = bytearray(roce_packet(MAC_A, MAC_B, IP_A, IP_B, 0xC001, op.RC_RDMA_WRITE_LAST,
                                0x11, 6, b"y" * 64))
    bad[-5] ^= 0xFF  # payload byte: the ICRC no longer matches
    ack = ack_packet(MAC_B, MAC_A, IP_B, IP_A, 0xC001, 0x22, 6, 3)
    cnp = cnp_packet(MAC_B, MAC_A, IP_B, IP_A, 0xC001, 0x22)
    pfc = bytes(pfc_frame(MAC_B, {3: 2000}))
    arp = bytes.fromhex("ffffffffffff" "02000000000a" "0806") + bytes(28)
    return [write, bytes(bad), ack, cnp, pfc, arp]


@pytest.fixture()
def pcap(tmp_path: Path) -> Path:
    path = tmp_path / "sw-p1.pcap"
    w = PcapWriter(path)
    for i, frame in enumerate(_frames()):
        w.write(frame, 1_700_000_000_000_000_000 + i * 1000)
    w.close()
    return path


def test_decode_kinds(pcap: Path) -> None:
    recs = list(inspect_pcap(pcap))
    assert [r.kind for r in recs] == ["roce", "roce", "roce", "cnp", "pfc", "other"]
    w = recs[0]
    assert w.fields["opcode_name"] == "RC_RDMA_WRITE_FIRST" and w.fields["dest_qp"] == 0x11
    assert w.fields["psn"] == 5 and w.fields["ack_req"] and w.fields["icrc_ok"]
    assert w.ecn == 3 and w.src == MAC_A and w.dst == MAC_B
    assert recs[1].fields["icrc_ok"] is False
    assert recs[2].fields["aeth_msn"] == 3 and "aeth_syndrome" in recs[2].fields
    assert recs[4].fields["quanta"] == {"3": 2000}
    assert abs(recs[1].rel - 1e-6) < 1e-9 and recs[0].time == pytest.approx(1.7e9)
    lines = [format_line(r) for r in recs]
    assert "RC_RDMA_WRITE_FIRST" in lines[0] and "ack_req" in lines[0]
    assert "ecn=CE" in lines[0] and "icrc=ok" in lines[0]
    assert "icrc=BAD" in lines[1]
    assert "aeth=syn:" in lines[2] and "msn:3" in lines[2]
    assert lines[3].split()[4] == "CNP" and "BECN" in lines[3]
    assert "PFC p3=2000" in lines[4]
    assert "ARP" in lines[5]
    assert all("\n" not in line for line in lines)


def test_filters(pcap: Path) -> None:
    assert [r.kind for r in inspect_pcap(pcap, only="pfc")] == ["pfc"]
    assert [r.kind for r in inspect_pcap(pcap, only="cnp")] == ["cnp"]
    assert [r.index for r in inspect_pcap(pcap, only="ecn")] == [0]
    assert len(list(inspect_pcap(pcap, only="roce"))) == 3
    assert [r.index for r in inspect_pcap(pcap, flow=(IP_B, IP_A))] == [2, 3]
    assert [r.index for r in inspect_pcap(pcap, limit=2)] == [0, 1]
    assert [r.index for r in inspect_pcap(pcap, only="roce", limit=2)] == [0, 1]


def test_decode_garbage_never_raises() -> None:
    for frame in (b"", b"\x01", bytes(13), bytes(60)):
        assert decode_frame(frame).kind == "other"


def test_cli(pcap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(pcap), "--only", "roce", "--limit", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "RC_RDMA_WRITE_FIRST" in out[0]
    assert main(["inspect", str(pcap), "--json", "--flow", IP_A, IP_B]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["fields"]["psn"] for r in rows] == [5, 6]


def test_cli_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a capture at all")
    for path in (junk, tmp_path / "missing.pcap"):
        assert main(["inspect", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("aifabric: ")


def test_shell_namespace(pcap: Path, tmp_path: Path) -> None:
    ns, banner = build_namespace(tmp_path)
    assert list(ns["captures"]) == ["sw-p1"] and len(ns["captures"]["sw-p1"]) == 6
    assert "captures['sw-p1']: 6 packets" in banner
    assert "BTH" in ns["captures"]["sw-p1"][0] and ns["icrc_ok"](ns["captures"]["sw-p1"][0])
    assert "RC_RDMA_WRITE_FIRST" in ns["decode"](ns["captures"]["sw-p1"][0])
    with pytest.raises(ValueError):
        build_namespace(tmp_path / "nope")


def test_shell_stdin(pcap: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "emulator.cli.main", "shell", str(tmp_path)],
                          input="print('N=%d' % len(captures['sw-p1']))\n", cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "N=6" in proc.stdout
    assert "captures['sw-p1']: 6 packets" in proc.stderr  # code.interact's banner
