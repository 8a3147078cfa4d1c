"""Every way a topology file can be wrong gives one line naming file, line and key.

Each case is checked twice: through the library (the message) and through
the CLI (exit code 2, the same one line on stderr, no traceback).
"""

from __future__ import annotations

import pytest

from emulator.cli.main import main
from emulator.topology import TopologyError, load_topology, topology_from_dict

BASE = """\
name: bad
kind: rail-optimized
servers: 4
gpus_per_server: 4
servers_per_leaf: 4
spines: 2
host_link:   {rate: 100Mbps, delay: 5us}
fabric_link: {rate: 100Mbps, delay: 5us}
"""
FAT_TREE = """\
name: bad
kind: fat-tree
k: 4
host_link:   {rate: 100Mbps, delay: 5us}
fabric_link: {rate: 100Mbps, delay: 5us}
"""


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


# (id, file text, line or None, key or None, fragments the message must hold)
CASES = [
    ("unknown-key", BASE + "colour: red\n", 9, "colour",
     ["unknown key", "takes name, kind, servers"]),
    ("unknown-link-key", edit(BASE, "delay: 5us}", "delay: 5us, mtu: 9000}"), 7, "host_link.mtu",
     ["unknown key", "a link takes rate, delay"]),
    ("missing-key", edit(BASE, "spines: 2\n", ""), None, "spines",
     ["is missing", "kind rail-optimized needs"]),
    ("missing-link-delay", edit(BASE, "{rate: 100Mbps, delay: 5us}", "{rate: 100Mbps}"), 7,
     "host_link.delay", ["is missing", "a link needs rate, delay"]),
    ("link-not-mapping", edit(BASE, "{rate: 100Mbps, delay: 5us}", "100Mbps"), 7, "host_link",
     ["'100Mbps' is not a mapping", "{rate: 100Mbps, delay: 5us}"]),
    ("wrong-type", edit(BASE, "servers: 4", "servers: four"), 3, "servers",
     ["'four' is not a whole number", "use a whole number >= 1"]),
    ("float-count", edit(BASE, "servers: 4", "servers: 4.5"), 3, "servers",
     ["4.5 is not a whole number"]),
    ("bool-count", edit(BASE, "spines: 2", "spines: yes"), 6, "spines",
     ["true is not a whole number"]),
    ("zero-spines", edit(BASE, "spines: 2", "spines: 0"), 6, "spines",
     ["0 is below the minimum 1"]),
    ("zero-gpus", edit(BASE, "gpus_per_server: 4", "gpus_per_server: 0"), 4, "gpus_per_server",
     ["below the minimum 1", "from 1 to 64"]),
    ("leaf-too-small", edit(BASE, "servers_per_leaf: 4", "servers_per_leaf: 63"), 5,
     "servers_per_leaf", ["need 65 ports", "leaf_ports=64", "raise leaf_ports"]),
    ("tor-too-small", edit(edit(BASE, "rail-optimized", "leaf-spine"), "servers_per_leaf: 4",
                           "servers_per_leaf: 16"), 5, "servers_per_leaf",
     ["16 servers x 4 GPUs = 64 host ports", "leaf_ports=64"]),
    ("leaf-ports-range", BASE + "leaf_ports: 300\n", 9, "leaf_ports",
     ["above the maximum 254"]),
    ("too-many-leaves", edit(edit(BASE, "servers: 4", "servers: 300"), "servers_per_leaf: 4",
                             "servers_per_leaf: 1"), 3, "servers",
     ["300 leaves per rail", "room for 256"]),
    ("unknown-rate-unit", edit(BASE, "rate: 100Mbps", "rate: 100Mbs"), 7, "host_link.rate",
     ["'100Mbs' is not a rate; use a number with bps, Kbps, Mbps or Gbps (e.g. 100Mbps)"]),
    ("zero-rate", edit(BASE, "rate: 100Mbps", "rate: 0Mbps"), 7, "host_link.rate",
     ["not a positive rate"]),
    ("unknown-delay-unit", edit(BASE, "fabric_link: {rate: 100Mbps, delay: 5us}",
                                "fabric_link: {rate: 100Mbps, delay: 5 parsecs}"), 8,
     "fabric_link.delay", ["'5 parsecs' is not a delay", "ns, us, ms or s"]),
    ("negative-delay", edit(BASE, "delay: 5us}", "delay: -3}"), 7, "host_link.delay",
     ["not a delay >= 0"]),
    ("unknown-kind", edit(BASE, "kind: rail-optimized", "kind: dragonfly"), 2, "kind",
     ["'dragonfly' is not a known kind", "rail-optimized, leaf-spine, fat-tree"]),
    ("missing-kind", edit(BASE, "kind: rail-optimized\n", ""), None, "kind",
     ["is missing", "rail-optimized, leaf-spine, fat-tree"]),
    ("bad-name", edit(BASE, "name: bad", "name: 'two words'"), 1, "name",
     ["'two words' is not allowed", "letters, digits"]),
    ("odd-k", edit(FAT_TREE, "k: 4", "k: 5"), 3, "k", ["5 is odd", "even k >= 2"]),
    ("small-k", edit(FAT_TREE, "k: 4", "k: 0"), 3, "k", ["below the minimum 2"]),
    ("huge-k", edit(FAT_TREE, "k: 4", "k: 24"), 3, "k", ["288 edge switches", "k <= 22"]),
    ("fat-tree-with-servers", FAT_TREE + "servers: 16\n", 6, "servers",
     ["does not apply to kind fat-tree", "takes name, kind, k"]),
    ("fat-tree-missing-k", edit(FAT_TREE, "k: 4\n", ""), None, "k", ["is missing"]),
    ("duplicate-key", BASE + "spines: 3\n", 9, "spines", ["given twice (first on line 6)"]),
    ("scale-up-bad-rate", BASE + "scale_up: {rate: 450GB/s, hop_latency: 250ns}\n", 9,
     "scale_up.rate", ["'450GB/s' is not a rate", "GBps", "(e.g. 450GBps)"]),
    ("scale-up-bad-latency", BASE + "scale_up: {rate: 450GBps, hop_latency: fast}\n", 9,
     "scale_up.hop_latency", ["'fast' is not a delay", "ns, us, ms or s"]),
    ("scale-up-missing-latency", BASE + "scale_up: {rate: 450GBps}\n", 9,
     "scale_up.hop_latency", ["is missing", "scale_up needs rate, hop_latency"]),
    ("scale-up-unknown-key", BASE + "scale_up: {rate: 450GBps, hop_latency: 1us, mtu: 9}\n",
     9, "scale_up.mtu", ["unknown key", "scale_up takes rate, hop_latency, servers_per_domain"]),
    ("scale-up-not-mapping", BASE + "scale_up: 450GBps\n", 9, "scale_up",
     ["'450GBps' is not a mapping", "{rate: 450GBps, hop_latency: 250ns}"]),
    ("scale-up-domain-not-dividing",
     BASE + "scale_up: {rate: 450GBps, hop_latency: 1us, servers_per_domain: 3}\n", 9,
     "scale_up.servers_per_domain", ["3 does not divide the 4 servers"]),
    ("scale-up-zero-domain",
     BASE + "scale_up: {rate: 450GBps, hop_latency: 1us, servers_per_domain: 0}\n", 9,
     "scale_up.servers_per_domain", ["below the minimum 1"]),
    ("fat-tree-scale-up-not-dividing",
     FAT_TREE + "scale_up: {rate: 900GBps, hop_latency: 1us, servers_per_domain: 3}\n", 6,
     "scale_up.servers_per_domain", ["3 does not divide the 16 servers"]),
    ("sites-one", BASE + "sites: {count: 1, dci_link: {rate: 400Gbps, distance: 10km}}\n", 9,
     "sites.count", ["below the minimum 2", "from 2 to 16"]),
    ("sites-missing-dci", BASE + "sites: {count: 2}\n", 9, "sites.dci_link",
     ["is missing", "sites needs count, dci_link"]),
    ("sites-unknown-key", BASE + "sites: {count: 2, dci: 1, dci_link: {rate: 1Gbps, delay: 1us}}\n",
     9, "sites.dci", ["unknown key", "sites takes count, border_switches, dci_link"]),
    ("dci-both-delay-and-distance",
     BASE + "sites: {count: 2, dci_link: {rate: 1Gbps, delay: 50us, distance: 10km}}\n", 9,
     "sites.dci_link", ["exactly one of delay", "distance (e.g. 10km, 5us per km)"]),
    ("dci-neither", BASE + "sites: {count: 2, dci_link: {rate: 1Gbps}}\n", 9,
     "sites.dci_link", ["exactly one of delay"]),
    ("dci-bad-distance", BASE + "sites: {count: 2, dci_link: {rate: 1Gbps, distance: 10 miles}}\n",
     9, "sites.dci_link.distance", ["'10 miles' is not a distance", "m or km (e.g. 10km)"]),
    ("dci-bad-rate", BASE + "sites: {count: 2, dci_link: {rate: fast, delay: 50us}}\n", 9,
     "sites.dci_link.rate", ["'fast' is not a rate"]),
    ("dci-unknown-key",
     BASE + "sites: {count: 2, dci_link: {rate: 1Gbps, delay: 1us, buffer: 1MB}}\n", 9,
     "sites.dci_link.buffer", ["unknown key", "sites.dci_link takes rate, delay, distance"]),
    ("sites-too-many-leaves", edit(FAT_TREE, "k: 4", "k: 16")
     + "sites: {count: 3, dci_link: {rate: 1Gbps, delay: 1us}}\n", 6, "sites.count",
     ["3 sites x 128 leaves per rail need 384", "room for 256"]),
]
FILE_CASES = [
    ("yaml-syntax", "name: bad\nkind: [rail\n", 3, ["not valid YAML"]),
    ("yaml-tab", "name: bad\n\tkind: x\n", 2, ["not valid YAML"]),
    ("empty", "", None, ["a topology is a mapping", "empty document"]),
    ("list", "- a\n- b\n", None, ["a topology is a mapping", "not a list"]),
]


@pytest.mark.parametrize("text, line, key, fragments",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_topology_message(tmp_path, text, line, key, fragments):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TopologyError) as caught:
        load_topology(path)
    message = str(caught.value)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert message.startswith(f"{where}key '{key}': ")
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_rate_message_matches_the_documented_example(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(BASE, "rate: 100Mbps", "rate: 100Mbs"))
    with pytest.raises(TopologyError) as caught:
        load_topology(path)
    assert str(caught.value) == (
        f"{path}:7: key 'host_link.rate': '100Mbs' is not a rate; use a number with bps, "
        "Kbps, Mbps or Gbps (e.g. 100Mbps)")


@pytest.mark.parametrize("text, line, fragments", [case[1:] for case in FILE_CASES],
                         ids=[case[0] for case in FILE_CASES])
def test_bad_file_message(tmp_path, text, line, fragments):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TopologyError) as caught:
        load_topology(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: " if line is not None else f"{path}: ")
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_missing_file(tmp_path):
    with pytest.raises(TopologyError, match=r"nope\.yaml: no such topology file$"):
        load_topology(tmp_path / "nope.yaml")


def test_errors_from_a_dict_name_the_source():
    with pytest.raises(TopologyError, match=r"^scenario\.yaml: key 'spines': 0 is below"):
        topology_from_dict({"name": "x", "kind": "leaf-spine", "servers": 2, "gpus_per_server": 1,
                            "servers_per_leaf": 2, "spines": 0,
                            "host_link": {"rate": 10, "delay": 0},
                            "fabric_link": {"rate": 10, "delay": 0}}, source="scenario.yaml")


def test_topology_error_is_a_value_error_with_exit_code_2():
    assert issubclass(TopologyError, ValueError) and TopologyError.exit_code == 2


ALL_CLI_CASES = [(case[0], case[1]) for case in CASES] + [(c[0], c[1]) for c in FILE_CASES]


@pytest.mark.parametrize("command", ["show", "draw", "paths"])
@pytest.mark.parametrize("text", [case[1] for case in ALL_CLI_CASES],
                         ids=[case[0] for case in ALL_CLI_CASES])
def test_cli_prints_one_line_and_exits_2(tmp_path, capsys, text, command):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    argv = {"show": ["topo", "show", str(path), "--json"],
            "draw": ["topo", "draw", str(path), "-o", str(tmp_path / "out.png")],
            "paths": ["topo", "paths", str(path), "srv0/gpu0", "srv1/gpu0"]}[command]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"aifabric: {path}")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert not (tmp_path / "out.png").exists()


def test_cli_missing_file(tmp_path, capsys):
    assert main(["topo", "show", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == f"aifabric: {tmp_path / 'nope.yaml'}: no such topology file\n"
