"""Reading a tutorials exercise as ``make run`` would, without root: the
Makefile's TOPO and DEFAULT_PROG, ``--program`` and ``--topo``,
topology.json's hosts, switches and links (latency and bandwidth), the
layout handed to the network, and one line for every mistake."""

import json
import shutil
from pathlib import Path

import pytest

from emulator.cli.main import main
from emulator.exercise.build import build_exercise
from emulator.exercise.errors import ExerciseError
from emulator.exercise.session import ExerciseSession
from emulator.exercise.spec import load_topology, makefile_vars, parse_latency_us, read_exercise

FIXTURE = Path(__file__).resolve().parents[1] / "tutorial_kit" / "exercise"


@pytest.fixture
def exercise(tmp_path) -> Path:
    directory = tmp_path / "relay"
    shutil.copytree(FIXTURE, directory)
    return directory


def edit_topology(directory: Path, change) -> Path:  # type: ignore[no-untyped-def]
    path = directory / "line-topo" / "topology.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def test_the_makefile_picks_the_topology_and_the_top_level_program(exercise):
    assert makefile_vars(exercise)["TOPO"] == "line-topo/topology.json"
    found = read_exercise(exercise)
    assert found.topology_path == exercise / "line-topo" / "topology.json"
    assert found.default_program == exercise / "relay.p4"
    assert found.programs == (exercise / "relay.p4",)


def test_program_replaces_the_program_of_its_name(exercise, tmp_path):
    solution = exercise / "solution" / "relay.p4"
    found = read_exercise(exercise, solution)
    assert found.programs == (solution,) and found.default_program == solution
    other = tmp_path / "other.p4"
    shutil.copy(solution, other)
    found = read_exercise(exercise, other)
    assert set(found.programs) == {exercise / "relay.p4", other}
    assert found.default_program == other


def test_without_a_makefile_topology_json_and_default_prog(exercise):
    (exercise / "Makefile").unlink()
    with pytest.raises(ExerciseError, match=r"relay/topology.json: no such file \(from .*relay\)"):
        read_exercise(exercise)
    shutil.copy(exercise / "line-topo" / "topology.json", exercise / "topology.json")
    assert read_exercise(exercise).topology_path == exercise / "topology.json"
    shutil.copy(exercise / "relay.p4", exercise / "second.p4")
    with pytest.raises(ExerciseError, match="several .p4 programs .*set DEFAULT_PROG"):
        read_exercise(exercise)
    (exercise / "Makefile").write_text("DEFAULT_PROG = second.p4\n\t@echo recipe = ignored\n")
    assert read_exercise(exercise).default_program == exercise / "second.p4"


def test_topology_hosts_switches_and_links(exercise):
    topology = load_topology(exercise / "line-topo" / "topology.json")
    h1, h2, h3 = topology.hosts
    assert (h1.name, h1.ip, h1.prefix_len, h1.mac) == ("h1", "10.0.1.1", 24, "08:00:00:00:01:11")
    assert h3.commands[0] == "route add default gw 10.0.3.254 dev eth0"
    assert [(s.name, s.index, s.runtime_json) for s in topology.switches] == [
        ("s1", 0, "line-topo/s1-runtime.json"), ("s2", 1, "line-topo/s2-runtime.json"),
        ("s3", 2, "line-topo/s3-runtime.json")]
    by_ends = {(link.host or link.switch_a, link.switch_b): link for link in topology.links}
    assert by_ends[("h2", "s2")].port_b == 1                           # either order
    assert by_ends[("h3", "s3")].rate_bps == 50_000_000                # 50 Mbit/s
    s1s2 = by_ends[("s1", "s2")]
    assert (s1s2.port_a, s1s2.port_b, s1s2.delay_us, s1s2.rate_bps) == (2, 2, 1000.0, 20_000_000)
    assert by_ends[("s1", "s3")].delay_us == 500.0                     # a number is ms
    assert topology.ports("s3") == [1, 2, 3]


@pytest.mark.parametrize("value, us", [(0, 0.0), (2, 2000.0), (0.5, 500.0), ("0", 0.0),
                                       ("10", 10.0), ("5ms", 5000.0), ("100us", 100.0),
                                       ("1s", 1e6), (" 2.5 ms", 2500.0)])
def test_latencies_as_run_exercise_and_tc_read_them(value, us):
    assert parse_latency_us(value, "x") == us


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(nodes={}), "unknown key 'nodes'; allowed: hosts, switches, links"),
    (lambda d: d["hosts"]["h1"].update(ip="10.0.1.1"), "hosts.h1.ip: '10.0.1.1' is not an IPv4 "
                                                       "address with a prefix length"),
    (lambda d: d["hosts"]["h1"].update(mac="08:00"), "hosts.h1.mac: '08:00' is not a MAC address"),
    (lambda d: d["switches"]["s1"].update(grpc_port=1), "switches.s1: unknown key 'grpc_port'"),
    (lambda d: d["switches"]["s1"].update(cpu_port="x"), "switches.s1.cpu_port: 'x': use a number"),
    (lambda d: d["links"].append(["h1", "s2-p9"]), "host h1 already has a link"),
    (lambda d: d["links"].append(["s1-p1", "s3-p9"]), "port 1 of s1 is already used by links[0]"),
    (lambda d: d["links"].append(["h1", "s7-p1"]), "'s7-p1' is neither a host (h1, h2, h3) nor a "
                                                   "switch port"),
    (lambda d: d["links"].append(["h1", "s1"]), "'s1': name the switch port, e.g. s1-p1"),
    (lambda d: d["links"].append(["s1-p5", "s2-p5", "fast"]), "latency 'fast': use a number of ms"),
    (lambda d: d["links"].append(["s1-p5", "s2-p5", 0, -1]), "bandwidth -1: use a number of Mbit/s"),
    (lambda d: d["links"].pop(0), "hosts.h1 has no link"),
])
def test_topology_mistakes_are_one_line(exercise, change, message):
    path = edit_topology(exercise, change)
    with pytest.raises(ExerciseError) as err:
        load_topology(path)
    assert message in str(err.value) and str(err.value).startswith(str(path))
    assert "\n" not in str(err.value)


def test_the_cpu_port_may_be_a_string_as_the_tutorials_write_it(exercise):
    path = edit_topology(exercise, lambda d: d["switches"]["s1"].update(cpu_port="510"))
    assert load_topology(path).switch("s1").cpu_port == 510


def test_build_writes_what_the_runtime_files_name(exercise):
    built = build_exercise(read_exercise(exercise, exercise / "solution" / "relay.p4"))
    runtime = json.loads((exercise / "line-topo" / "s1-runtime.json").read_text())
    assert built.default.device_config == exercise / runtime["bmv2_json"]
    assert built.default.p4info == exercise / runtime["p4info"]
    assert json.loads(built.default.device_config.read_text())["format"] == "aifabric-p4-device/1"


def test_the_layout_numbers_switches_and_ports_as_the_tutorials_do(exercise):
    session = ExerciseSession(read_exercise(exercise, exercise / "solution" / "relay.p4"),
                              say=lambda _text: None)
    layout = session._layout(build_exercise(session.exercise))
    assert [(s.name, s.index) for s in layout.switches] == [("s1", 0), ("s2", 1), ("s3", 2)]
    s1 = layout.switches[0]
    assert {(p.port, p.peer, p.peer_port, p.rate_bps, p.delay_us) for p in s1.ports} == {
        (1, "h1", 0, 0, 4000.0), (2, "s2", 2, 20_000_000, 1000.0), (3, "s3", 2, 0, 500.0)}
    assert [(h.name, h.switch, h.port, h.rate_bps) for h in layout.hosts] == [
        ("h1", "s1", 1, 0), ("h2", "s2", 1, 0), ("h3", "s3", 1, 50_000_000)]
    assert s1.device_config.endswith("build/relay.json")


def test_cli_errors_are_one_line_before_anything_runs(exercise, capsys):
    assert main(["exercise", str(exercise / "nope")]) == 2
    assert "nope: not a directory" in capsys.readouterr().err
    assert main(["exercise", str(exercise), "--program", "missing.p4"]) == 2
    assert capsys.readouterr().err.strip() == "aifabric: --program missing.p4: no such file"
    path = edit_topology(exercise, lambda d: d["switches"]["s2"].update(runtime_json="gone.json"))
    assert main(["exercise", str(exercise), "--check"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"aifabric: {path}: switches.s2.runtime_json: gone.json: no such file")
