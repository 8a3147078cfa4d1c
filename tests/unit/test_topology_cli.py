"""``aifabric topo``: JSON outputs, human outputs, drawing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.cli.main import main

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_show_json_prints_the_counts(capsys):
    assert main(["topo", "show", str(TOPOLOGIES / "rail-8x8.yaml"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {key: got[key] for key in ("servers", "gpus", "rails", "leaves", "spines", "switches",
                                      "hosts", "host_links", "fabric_links")} == {
        "servers": 8, "gpus": 64, "rails": 8, "leaves": 8, "spines": 4, "switches": 12,
        "hosts": 8, "host_links": 64, "fabric_links": 32}


def test_show_human_output_has_counts_links_and_switches(capsys):
    assert main(["topo", "show", str(TOPOLOGIES / "rail-4x4.yaml")]) == 0
    out = capsys.readouterr().out
    for text in ("rail-4x4", "host links", "100Mbps", "5us", "leaf-r3-0", "10.3.0.0/24", "spine1"):
        assert text in out


def test_paths_json(capsys):
    argv = ["topo", "paths", str(TOPOLOGIES / "rail-4x4.yaml"), "srv0/gpu1", "srv3/gpu2", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == {
        "src": "srv0/gpu1", "dst": "srv3/gpu2",
        "paths": [["leaf-r1-0", "spine0", "leaf-r2-0"], ["leaf-r1-0", "spine1", "leaf-r2-0"]],
    }


def test_paths_human_prints_one_path_per_line(capsys):
    assert main(["topo", "paths", str(TOPOLOGIES / "rail-4x4.yaml"), "srv0/gpu1", "srv3/gpu1"]) == 0
    assert capsys.readouterr().out == "leaf-r1-0\n"
    fat_tree = str(TOPOLOGIES / "fat-tree-k4.yaml")
    assert main(["topo", "paths", fat_tree, "srv0/gpu0", "srv9/gpu0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.count(" -> ") == 4 for line in lines)


@pytest.mark.parametrize("gpu", ["srv4/gpu0", "srv0/gpu4", "gpu0", "srv0-gpu0"])
def test_paths_unknown_gpu_is_one_line_with_the_valid_range(capsys, gpu):
    assert main(["topo", "paths", str(TOPOLOGIES / "rail-4x4.yaml"), gpu, "srv1/gpu0"]) == 2
    err = capsys.readouterr().err
    assert err == (f"aifabric: unknown GPU '{gpu}' in topology rail-4x4; use srvS/gpuR with S in "
                   "0..3 and R in 0..3 (e.g. srv0/gpu0)\n")


@pytest.mark.parametrize("name", ["quickstart", "fat-tree-k4"])
def test_draw_writes_a_png(tmp_path, capsys, name):
    out = tmp_path / f"{name}.png"
    assert main(["topo", "draw", str(TOPOLOGIES / f"{name}.yaml"), "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    assert str(out) in capsys.readouterr().out


def test_draw_into_a_missing_directory_is_one_line(tmp_path, capsys):
    out = tmp_path / "no" / "such" / "dir.png"
    assert main(["topo", "draw", str(TOPOLOGIES / "quickstart.yaml"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aifabric: {out}: directory") and err.count("\n") == 1


def test_draw_with_an_unknown_image_suffix_is_one_line(tmp_path, capsys):
    out = tmp_path / "picture.nope"
    assert main(["topo", "draw", str(TOPOLOGIES / "quickstart.yaml"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aifabric: {out}: cannot draw") and err.count("\n") == 1
