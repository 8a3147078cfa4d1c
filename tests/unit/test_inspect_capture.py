"""The runner's capture collection: a port's in/out pcaps merged in time
order, cut at max_packets (no root)."""

from __future__ import annotations

from pathlib import Path

from emulator.measure.inspect import read_pcap_frames
from emulator.run.captures import collect_captures
from emulator.targets.builtin.pcap import PcapWriter


def _pcap(path: Path, frames: list[tuple[int, bytes]]) -> Path:
    w = PcapWriter(path)
    for ts, frame in frames:
        w.write(frame, ts)
    w.close()
    return path


def test_collect_merges_and_truncates(tmp_path: Path) -> None:
    src_in = _pcap(tmp_path / "e1_in.pcap", [(10, b"a" * 60), (30, b"c" * 60)])
    src_out = _pcap(tmp_path / "e1_out.pcap", [(20, b"b" * 60), (40, b"d" * 60)])
    missing = tmp_path / "nope_in.pcap"
    plan = {"sw:1": (tmp_path / "pcaps" / "sw-p1.pcap", [src_in, src_out]),
            "sw:2": (tmp_path / "pcaps" / "sw-p2.pcap", [missing])}
    errors: list[str] = []
    done = collect_captures(plan, 3, errors)
    assert done == {"sw:1": {"file": "pcaps/sw-p1.pcap", "packets": 3, "seen": 4,
                             "truncated": True}}
    assert len(errors) == 1 and errors[0].startswith("capture sw:2:")
    frames = read_pcap_frames(tmp_path / "pcaps" / "sw-p1.pcap")
    assert [(ts, f[:1]) for ts, f in frames] == [(10, b"a"), (20, b"b"), (30, b"c")]
