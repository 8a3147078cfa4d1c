"""htsim's connection matrices (emulator/scenario/htsim.py): the lines as
csg-htsim's ``ConnectionMatrix::load`` reads them (start in picoseconds,
size in bytes, keys in any order), one-line errors naming the file and
line, and ``aifabric scenario from-htsim`` writing a scenario that
``aifabric scenario check`` accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.cli.main import main
from emulator.scenario.htsim import ConnectionMatrixError, default_duration_ns, flows_from_cm

ROOT = Path(__file__).resolve().parents[2]
FAT_TREE = ROOT / "topologies" / "fat-tree-k4.yaml"   # 16 GPUs, 100 Mb/s host links
GPUS = [f"srv{i}/gpu0" for i in range(4)]


def test_lines_as_htsim_reads_them():
    # csg-htsim's generators write start as us x 10^6: 5,000,000 ps = 5 us
    text = ("# a comment\nNodes 4\nConnections 3\n"
            "0->3 id 7 start 5000000 size 2000000\n"
            "2->1 size 100 start 1500 id 9\n"      # keys in any order; 1.5 ns -> 2 ns
            "1->2 start 0\n")                      # no size: sends until the end
    assert flows_from_cm(text, GPUS) == [
        {"id": "cm-7", "src": "srv0/gpu0", "dst": "srv3/gpu0", "size": 2_000_000,
         "start": "5000ns"},
        {"id": "cm-9", "src": "srv2/gpu0", "dst": "srv1/gpu0", "size": 100, "start": "2ns"},
        {"id": "cm-line6", "src": "srv1/gpu0", "dst": "srv2/gpu0", "size": "unlimited",
         "start": "0ns"}]
    # the original htsim (and ConnectionMatrix::save) write microseconds
    us = flows_from_cm("0->3 id 1 start 5.5 size 1\n", GPUS, start_unit="us")
    assert us[0]["start"] == "5500ns"


@pytest.mark.parametrize("text, message", [
    ("Nodes 4\n0->9 start 0 size 1\n", r"<cm>:2: host 9 is not below 4 \(Nodes\)"),
    ("0->4 start 0 size 1\n", r"<cm>:1: host 4 is not below 4 \(the topology's GPUs\)"),
    ("Nodes 8\n", r"<cm>:1: Nodes 8, but the topology has 4 GPUs"),
    ("Nodes 4\nConnections 2\n0->1 start 0 size 1\n", r"<cm>: says Connections 2 but has 1"),
    ("Nodes 4\n2->2 start 0 size 1\n", r"<cm>:2: 2->2 sends to itself"),
    ("0->1 id 3 size 1\n", r"<cm>:1: no start \(start T, in ps\)"),
    ("0->1 start 0 size 1 trigger 4\n", r"<cm>:1: 'trigger' \(flows started by triggers\)"),
    ("0->1 start 0\ntrigger id 1 oneshot\n", r"<cm>:2: trigger lines are not supported"),
    ("0->1 start 0 prio 3\n", r"<cm>:1: unknown key 'prio'; known: id, start, size"),
    ("0->1 start 0 size 2MB\n", r"<cm>:1: size '2MB' is not a whole number"),
    ("0->1 start soon\n", r"<cm>:1: start 'soon' is not a number"),
    ("0->1 start -1\n", r"<cm>:1: start '-1' is not >= 0"),
    ("0->1 id 0 start 0\n", r"<cm>:1: id 0 is not allowed \(htsim refuses flow id 0\)"),
    ("0->1 id 2 start 0\n1->0 id 2 start 0\n", r"<cm>:2: id 2 again \(first on line 1\)"),
    ("0->1 start\n", r"<cm>:1: start has no value"),
    ("0 -> 1 start 0\n", r"<cm>:1: '0 -> 1 start 0' is not 'SRC->DST"),
    ("Nodes four\n", r"<cm>:1: Nodes 'four' is not a whole number"),
    ("Nodes 4\n", r"<cm>: no connections"),
])
def test_mistakes_are_one_line_naming_the_line(text, message):
    with pytest.raises(ConnectionMatrixError, match=message) as info:
        flows_from_cm(text, GPUS)
    assert "\n" not in str(info.value)


def test_default_duration_is_twenty_times_the_busiest_link_direction():
    # srv0 sends 2 x 1 MB (16 Mbit: 160 ms at 100 Mb/s), everyone receives
    # at most 1 MB; 20 x 160 ms + 1 ms of last start = 3.201 s -> 5 s
    flows = [{"src": "a", "dst": "b", "size": 1_000_000, "start": "0ns"},
             {"src": "a", "dst": "c", "size": 1_000_000, "start": "1000000ns"},
             {"src": "c", "dst": "a", "size": "unlimited", "start": "0ns"}]
    assert default_duration_ns(flows, 100e6) == 5_000_000_000
    assert default_duration_ns(flows[2:], 100e6) == 1_000_000   # at least 1 ms


def _perm_cm(path: Path, hosts: int = 16) -> Path:
    lines = [f"Nodes {hosts}", f"Connections {hosts}"]
    lines += [f"{i}->{(i + 5) % hosts} id {i + 1} start {i * 1_000_000} size 2000000"
              for i in range(hosts)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_from_htsim_writes_a_scenario_that_check_accepts(tmp_path, capsys):
    cm = _perm_cm(tmp_path / "perm_16n_16c_2MB.cm")
    out = tmp_path / "out" / "perm.yaml"
    out.parent.mkdir()
    assert main(["scenario", "from-htsim", str(cm), "--topology", str(FAT_TREE),
                 "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}: 16 flows, 32,000,000 bytes" in said and "duration 5s" in said
    text = out.read_text()
    assert text.startswith("# Converted by 'aifabric scenario from-htsim' from "
                           "perm_16n_16c_2MB.cm (start read in ps)")
    topology = text.split("\ntopology: ")[1].split("\n")[0]
    assert not Path(topology).is_absolute() and (out.parent / topology).resolve() == FAT_TREE
    assert main(["scenario", "check", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "perm_16n_16c_2MB" and data["duration_ns"] == 5_000_000_000
    flows = data["flows"]
    assert len(flows) == 16 and flows[3] == {**flows[3], "id": "cm-4", "src": "srv3/gpu0",
                                             "dst": "srv8/gpu0", "size_bytes": 2_000_000,
                                             "start_ns": 3000}
    # an existing file is kept unless --force; --duration and --name are used
    assert main(["scenario", "from-htsim", str(cm), "--topology", str(FAT_TREE),
                 "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"aifabric: {out}: exists; pass --force to overwrite it\n"
    assert main(["scenario", "from-htsim", str(cm), "--topology", str(FAT_TREE), "-o",
                 str(out), "--force", "--duration", "20s", "--name", "p16",
                 "--start-unit", "us"]) == 0
    capsys.readouterr()
    assert main(["scenario", "check", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "p16" and data["duration_ns"] == 20_000_000_000
    assert data["flows"][3]["start_ns"] == 3_000_000_000   # 3e6 us


@pytest.mark.parametrize("args, message", [
    (["--duration", "5"], "aifabric: --duration: '5' has no unit"),
    (["--name", "a b"], "perm.yaml:6: key 'name': 'a b' is not allowed"),
    (["--topology", "/nonexistent/t.yaml"], "aifabric: /nonexistent/t.yaml: no such "
                                            "topology file"),
])
def test_from_htsim_mistakes_are_one_line(tmp_path, capsys, args, message):
    cm = _perm_cm(tmp_path / "p.cm")
    out = tmp_path / "perm.yaml"
    argv = ["scenario", "from-htsim", str(cm), "-o", str(out)]
    argv += args if "--topology" in args else ["--topology", str(FAT_TREE)] + args
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists() and list(tmp_path.iterdir()) == [cm]   # nothing left behind


def test_from_htsim_names_the_matrix_line(tmp_path, capsys):
    cm = tmp_path / "bad.cm"
    cm.write_text("Nodes 16\nConnections 1\n0->3 id 1 start 0 size 100 send_done_trigger 2\n")
    assert main(["scenario", "from-htsim", str(cm), "--topology", str(FAT_TREE), "-o",
                 str(tmp_path / "x.yaml")]) == 2
    assert capsys.readouterr().err == (f"aifabric: {cm}:3: 'send_done_trigger' (flows started "
                                       f"by triggers) is not supported: scenario flows start "
                                       f"at times\n")
    missing = tmp_path / "none.cm"
    assert main(["scenario", "from-htsim", str(missing), "--topology", str(FAT_TREE), "-o",
                 str(tmp_path / "x.yaml")]) == 2
    assert capsys.readouterr().err == (f"aifabric: {missing}: cannot read it: No such file "
                                       f"or directory\n")
