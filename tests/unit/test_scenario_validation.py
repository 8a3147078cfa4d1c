"""Every way a scenario file can be wrong gives one line naming file, line and key.

Each case is checked twice: through the library (the message: file, line,
key, what is allowed) and through the CLI (exit code 2, the same line on
stderr, no traceback).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.cli.main import main
from emulator.scenario import ScenarioError, load_scenario

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
RAIL_4X4 = TOPOLOGIES / "rail-4x4.yaml"
BASE = f"""\
name: bad
topology: {RAIL_4X4}
duration: 10s
switches:
  buffer: 256KB
  ecn: {{enabled: true, kmin: 20KB, kmax: 80KB, pmax: 0.2}}
  pfc: {{enabled: true, priorities: [3], xoff: 40KB, xon: 20KB, quanta: 65535}}
  priorities: {{roce_dscp: 26, roce: 3, cnp_dscp: 48, cnp: 6}}
hosts:
  mtu: 1024B
  dcqcn: {{enabled: true, g: 0.00390625, rate_ai: 5Mbps, rate_hai: 50Mbps, timer: 55us}}
workload:
  flows:
    - {{id: f1, src: srv0/gpu0, dst: srv3/gpu0, size: 4MB, start: 0s}}
  generators:
    - {{kind: incast, senders: [srv0/gpu1, srv1/gpu1], receiver: srv3/gpu1, size: 2MB}}
events:
  - {{at: 2s, kind: link_down, link: [leaf-r0-0, spine0]}}
  - {{at: 3s, kind: link_up, link: [leaf-r0-0, spine0]}}
  - {{at: 1s, kind: stop_flow, flow: f1}}
capture:
  ports: [leaf-r0-0:1, spine0:*, srv3/gpu0]
  max_packets: 10000
expect_checks:
  - {{metric: totals.drops, op: "==", value: 0}}
"""
INLINE = ("{name: t, kind: rail-optimized, servers: 4, gpus_per_server: 4, servers_per_leaf: 4, "
          "spines: 2, host_link: {rate: 100Mbps, delay: 5us}, "
          "fabric_link: {rate: 100Mbps, delay: 5us}}")


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def override(text: str) -> str:
    return edit("buffer: 256KB\n", f"buffer: 256KB\n  overrides: [{text}]\n")


SIZE_HINT = "use a number with B, KB, MB or GB (e.g. 4MB), or KiB, MiB, GiB for powers of 1024"
# (id, file text, line or None, key, fragments the message must hold)
CASES = [
    # shape (schema)
    ("unknown-key", BASE + "colour: red\n", 26, "colour",
     ["unknown key; a scenario takes name, description, expect, topology"]),
    ("missing-duration", edit("duration: 10s\n", ""), None, "duration",
     ["is missing; a scenario needs name, topology, duration, workload"]),
    ("bad-name", edit("name: bad", "name: 'two words'"), 1, "name",
     ["'two words' is not allowed", "letters, digits"]),
    ("unknown-target", BASE + "target: tofino\n", 26, "target",
     ["'tofino' is not a known target; use one of builtin, bmv2"]),
    ("slow-time-scale", BASE + "time_scale: 0.5\n", 26, "time_scale",
     ["0.5 is too small", "a number >= 1"]),
    ("negative-seed", BASE + "seed: -1\n", 26, "seed", ["-1 is too small", ">= 0"]),
    ("duplicate-key", BASE + "duration: 5s\n", 26, "duration", ["given twice (first on line 3)"]),
    ("workload-not-mapping", edit("workload:", "workload: 3\nx:"), 12, "workload",
     ["3 is not a mapping", "{flows: [...], generators: [...], collectives: [...]}"]),
    ("pmax-range", edit("pmax: 0.2", "pmax: 1.5"), 6, "switches.ecn.pmax",
     ["1.5 is too large", "a probability from 0 to 1"]),
    ("quanta-range", edit("quanta: 65535", "quanta: 70000"), 7, "switches.pfc.quanta",
     ["70000 is too large", "from 1 to 65535"]),
    ("priority-range", edit("priorities: [3]", "priorities: [8]"), 7, "switches.pfc.priorities[0]",
     ["8 is too large", "from 0 to 7"]),
    ("priority-twice", edit("priorities: [3]", "priorities: [3, 3]"), 7, "switches.pfc.priorities",
     ["lists 3 twice"]),
    ("roce-priority-range", edit("roce: 3", "roce: 9"), 8, "switches.priorities.roce",
     ["9 is too large", "from 0 to 7"]),
    ("dcqcn-g-zero", edit("g: 0.00390625", "g: 0"), 11, "hosts.dcqcn.g",
     ["0 is too small", "above 0 and at most 1"]),
    ("flow-missing-id", edit("id: f1, ", ""), 14, "workload.flows[0].id",
     ["is missing; a flow needs id, src, dst, size"]),
    ("flow-bad-id", edit("id: f1", "id: 'f 1'"), 14, "workload.flows[0].id", ["'f 1' is not allowed"]),
    ("flow-qps-zero", edit("start: 0s}", "start: 0s, qps: 0}"), 14, "workload.flows[0].qps",
     ["0 is too small", "from 1 to 64"]),
    ("flow-unknown-op", edit("start: 0s}", "start: 0s, op: atomic}"), 14, "workload.flows[0].op",
     ["'atomic' is not a known op; use one of write, send, read"]),
    ("generator-unknown-kind", edit("kind: incast", "kind: ring"), 16,
     "workload.generators[0].kind",
     ["'ring' is not a known kind; use one of incast, permutation, all-to-all, pairs"]),
    ("generator-missing-senders", edit("senders: [srv0/gpu1, srv1/gpu1], ", ""), 16,
     "workload.generators[0].senders",
     ["is missing; an incast generator needs kind, senders, receiver, size"]),
    ("generator-foreign-key", edit("receiver: srv3/gpu1", "receiver: srv3/gpu1, gpus: [srv0/gpu0]"),
     16, "workload.generators[0].gpus", ["unknown key; an incast generator takes kind, id, size"]),
    ("event-unknown-kind", edit("kind: link_down", "kind: link_sideways"), 18, "events[0].kind",
     ["'link_sideways' is not a known kind; use one of link_down, link_up, stop_flow"]),
    ("event-foreign-key", edit("kind: link_down, link", "kind: link_down, flow: f1, link"), 18,
     "events[0].flow", ["unknown key; a link_down event takes at, kind, link"]),
    ("event-missing-link", edit("kind: link_down, link: [leaf-r0-0, spine0]", "kind: link_down"),
     18, "events[0].link", ["is missing; a link_down event needs at, kind, link"]),
    ("link-one-end", edit("link: [leaf-r0-0, spine0]}", "link: [leaf-r0-0]}"), 18,
     "events[0].link", ["too few", "[leaf-r0-0, spine0]"]),
    ("check-unknown-op", edit('op: "==", value: 0', 'op: "=", value: 0'), 25, "expect_checks[0].op",
     ["'=' is not a known op; use one of ==, !=, <, <=, >, >="]),
    ("check-bad-metric", edit("metric: totals.drops", 'metric: "totals..drops"'), 25,
     "expect_checks[0].metric", ["is not allowed", "dotted path"]),
    ("override-unknown-key", override("{switch: leaf-r0-0, ecn: {priorities: [3]}}"), 6,
     "switches.overrides[0].ecn.priorities",
     ["unknown key; an ecn override takes enabled, kmin, kmax, pmax"]),
    # units
    ("size-unit", edit("size: 4MB", "size: 4MiBs"), 14, "workload.flows[0].size",
     [f"'4MiBs' is not a size; {SIZE_HINT}"]),
    ("size-bits", edit("size: 4MB", "size: 4Mb"), 14, "workload.flows[0].size",
     ["'b' means bits and sizes are bytes (write 4MB)"]),
    ("size-zero", edit("size: 4MB", "size: 0B"), 14, "workload.flows[0].size",
     ["'0B' is not a size > 0", "or unlimited"]),
    ("size-word", edit("size: 4MB", "size: forever"), 14, "workload.flows[0].size",
     ["'forever' is not a size", "or unlimited to send until stopped"]),
    ("duration-no-unit", edit("duration: 10s", "duration: 10"), 3, "duration",
     ["10 has no unit (write 10s, 10ms, 10us or 10ns)"]),
    ("duration-word", edit("duration: 10s", "duration: ten"), 3, "duration",
     ["'ten' is not a duration; use a number with ns, us, ms or s (e.g. 10s)"]),
    ("duration-zero", edit("duration: 10s", "duration: 0s"), 3, "duration",
     ["'0s' is not a duration > 0"]),
    ("rate-unit", edit("rate_ai: 5Mbps", "rate_ai: 5Mbs"), 11, "hosts.dcqcn.rate_ai",
     ["'5Mbs' is not a rate; use a number with bps, Kbps, Mbps or Gbps (e.g. 100Mbps)"]),
    ("timer-zero", edit("timer: 55us", "timer: 0us"), 11, "hosts.dcqcn.timer",
     ["'0us' is not a duration > 0"]),
    ("threshold-word", edit("kmin: 20KB", "kmin: 20 packets"), 6, "switches.ecn.kmin",
     ["'20 packets' is not a threshold; use a size (e.g. 20KB) or a packet count (e.g. 16pkts)"]),
    ("mtu-decimal", edit("mtu: 1024B", "mtu: 1KB"), 10, "hosts.mtu",
     ["'1KB' (1000 bytes) is not a RoCE path MTU", "256B, 512B, 1024B, 2048B or 4096B",
      "write 1024B or 1KiB"]),
    ("mtu-ethernet", edit("mtu: 1024B", "mtu: 1500"), 10, "hosts.mtu",
     ["1500 is not a RoCE path MTU"]),
    # names in the topology
    ("unknown-gpu", edit("dst: srv3/gpu0", "dst: srv9/gpu0"), 14, "workload.flows[0].dst",
     ["unknown GPU 'srv9/gpu0' in topology rail-4x4", "S in 0..3 and R in 0..3"]),
    ("pattern-as-dst", edit("dst: srv3/gpu0", "dst: 'srv*/gpu0'"), 14, "workload.flows[0].dst",
     ["'srv*/gpu0' is a pattern; name one GPU"]),
    ("pattern-matches-nothing", edit("senders: [srv0/gpu1, srv1/gpu1]", "senders: ['srv9*/gpu1']"),
     16, "workload.generators[0].senders[0]",
     ["pattern 'srv9*/gpu1' matches no GPU of topology rail-4x4", "srv0/gpu0 .. srv3/gpu3"]),
    ("pattern-empty-range", edit("senders: [srv0/gpu1, srv1/gpu1]", "senders: ['srv[3-1]/gpu1']"),
     16, "workload.generators[0].senders[0]",
     ["pattern 'srv[3-1]/gpu1': range [3-1] is empty (write the smaller number first)"]),
    ("unknown-switch-in-link", edit("link: [leaf-r0-0, spine0]}", "link: [leaf-r0-0, spine7]}"),
     18, "events[0].link[1]", ["unknown switch 'spine7' in topology rail-4x4",
                               "its switches are leaf-r0-0"]),
    ("no-such-link", edit("link: [leaf-r0-0, spine0]}", "link: [leaf-r0-0, leaf-r1-0]}"), 18,
     "events[0].link", ["no link between leaf-r0-0 and leaf-r1-0",
                        "leaf-r0-0 links to spine0, spine1, srv0/gpu0"]),
    ("capture-port-range", edit("leaf-r0-0:1,", "leaf-r0-0:9,"), 22, "capture.ports[0]",
     ["switch leaf-r0-0 has ports 1..6, not 9"]),
    ("capture-unknown-switch", edit("leaf-r0-0:1,", "leaf9:1,"), 22, "capture.ports[0]",
     ["unknown switch 'leaf9'"]),
    ("capture-port-word", edit("leaf-r0-0:1,", "leaf-r0-0:x,"), 22, "capture.ports[0]",
     ["port 'x' of 'leaf-r0-0:x' is not a number", "leaf-r0-0:*"]),
    ("capture-no-port", edit("leaf-r0-0:1,", "leaf-r0-0,"), 22, "capture.ports[0]",
     ["'leaf-r0-0' is not a capture point; use SWITCH:PORT"]),
    ("override-port-range", override("{switch: leaf-r0-0, port: 33, buffer: 30KB}"), 6,
     "switches.overrides[0].port", ["switch leaf-r0-0 has ports 1..6, not 33"]),
    ("override-unknown-switch", override("{switch: leaf7, buffer: 30KB}"), 6,
     "switches.overrides[0].switch", ["unknown switch 'leaf7'"]),
    # the topology
    ("topology-missing-file", edit(f"topology: {RAIL_4X4}", "topology: nowhere.yaml"), 2,
     "topology", ["'nowhere.yaml' does not exist (looked for", "relative to this scenario file"]),
    ("inline-topology-rate", edit(f"topology: {RAIL_4X4}",
                                  "topology: " + INLINE.replace("rate: 100Mbps", "rate: 100Mbs", 1)),
     2, "topology.host_link.rate", ["'100Mbs' is not a rate"]),
    ("inline-topology-missing", edit(f"topology: {RAIL_4X4}", "topology: " + INLINE.replace(
        ", fabric_link: {rate: 100Mbps, delay: 5us}", "")), 2, "topology.fabric_link",
     ["is missing; kind rail-optimized needs"]),
    # across keys
    ("kmin-above-kmax", edit("kmin: 20KB", "kmin: 100KB"), 6, "switches.ecn.kmin",
     ["kmin 100KB is above kmax 80KB", "kmin <= kmax"]),
    ("kmin-above-kmax-pkts", edit("kmin: 20KB, kmax: 80KB", "kmin: 20pkts, kmax: 10pkts"), 6,
     "switches.ecn.kmin", ["kmin 20pkts (= 21640B) is above kmax 10pkts (= 10820B)"]),
    ("kmin-above-buffer", edit("kmin: 20KB, kmax: 80KB", "kmin: 300KB, kmax: 400KB",
                               edit("pfc: {enabled: true,", "pfc: {enabled: false,")), 6,
     "switches.ecn.kmin", ["kmin 300KB is not below the buffer 256KB", "nothing would be marked"]),
    ("xon-not-below-xoff", edit("xon: 20KB", "xon: 40KB"), 7, "switches.pfc.xon",
     ["xon 40KB is not below xoff 40KB", "xon < xoff"]),
    # a lossless queue has no static cap: xoff above buffer is fine, a
    # headroom too small for the link is not
    ("headroom-below-in-flight", edit("xoff: 40KB", "xoff: 300KB, headroom: 1KB"), 7,
     "switches.pfc.headroom", ["1KB cannot hold what is in flight on port", "needs ",
                               "2 x rate x delay + 3 frames of 1098 B", "raise it or write auto"]),
    ("override-headroom-below-in-flight",
     override("{switch: leaf-r0-0, port: 3, pfc: {headroom: 2pkts}}"), 6,
     "switches.overrides[0].pfc.headroom", ["2pkts (= 2164B) cannot hold what is in flight on port "
                                            "leaf-r0-0:3"]),
    ("pool-below-headroom", edit("buffer: 256KB\n", "buffer: 256KB\n  pool: {size: 10KB}\n"), 6,
     "switches.pool.size", ["10KB does not exceed the", "raise it or write auto"]),
    ("override-xoff-below-xon", override("{switch: leaf-r0-0, pfc: {xoff: 10KB}}"), 6,
     "switches.overrides[0]", ["with this override, switch leaf-r0-0: xon 20KB is not below "
                               "xoff 10KB"]),
    ("override-own-key", override("{switch: leaf-r0-0, pfc: {xoff: 10KB, xon: 15KB}}"), 6,
     "switches.overrides[0].pfc.xon", ["xon 15KB is not below xoff 10KB"]),
    ("override-nothing", override("{switch: leaf-r0-0, port: 2}"), 6, "switches.overrides[0]",
     ["sets nothing; an override takes buffer, ecn or pfc"]),
    ("override-twice", override("{switch: leaf-r0-0, buffer: 1MB}, {switch: leaf-r0-0, buffer: 2MB}"),
     6, "switches.overrides[1]", ["overrides switch leaf-r0-0 again (first in "
                                  "switches.overrides[0]); merge the two"]),
    ("roce-lossy", edit("priorities: [3]", "priorities: [4]"), 7, "switches.pfc.priorities",
     ["[4] leaves the RoCE priority 3 lossy"]),
    ("roce-not-marked", edit("pmax: 0.2}", "pmax: 0.2, priorities: [2]}"), 6,
     "switches.ecn.priorities", ["does not mark the RoCE priority 3", "DCQCN would never see"]),
    ("same-dscp", edit("cnp_dscp: 48", "cnp_dscp: 26"), 8, "switches.priorities.cnp_dscp",
     ["26 is also roce_dscp"]),
    ("flow-priority-class", edit("start: 0s}", "start: 0s, priority: 5}"), 14,
     "workload.flows[0].priority", ["5 is not a traffic class of this fabric", "use 3 or 0"]),
    ("flow-to-itself", edit("dst: srv3/gpu0", "dst: srv0/gpu0"), 14, "workload.flows[0]",
     ["flow f1 goes from srv0/gpu0 to itself"]),
    ("flow-same-server", edit("dst: srv3/gpu0", "dst: srv0/gpu2"), 14, "workload.flows[0]",
     ["srv0/gpu0 and srv0/gpu2 are both on server srv0", "scale-up domain, not the fabric"]),
    ("flow-starts-late", edit("start: 0s}", "start: 12s}"), 14, "workload.flows[0]",
     ["flow f1 starts at 12s, not before the end at 10s"]),
    ("flow-id-twice", edit("flows:\n", "flows:\n    - {id: f1, src: srv1/gpu0, dst: srv2/gpu0, "
                                       "size: 1MB}\n"), 15, "workload.flows[1].id",
     ["'f1' is also the id of workload.flows[0]"]),
    ("generated-id-taken", edit("id: f1", "id: g0-1").replace("flow: f1", "flow: g0-1"), 16,
     "workload.generators[0]", ["makes flow 'g0-1', which is also the id of workload.flows[0]"]),
    ("generator-id-twice", edit("receiver: srv3/gpu1, size: 2MB}",
                                "receiver: srv3/gpu1, size: 2MB, id: x}\n"
                                "    - {kind: pairs, id: x, pairs: [[srv0/gpu2, srv1/gpu2]], "
                                "size: 1MB}"), 17, "workload.generators[1].id",
     ["'x' is also the id of workload.generators[0]"]),
    ("incast-named-sender-same-server",
     edit("senders: [srv0/gpu1, srv1/gpu1]", "senders: [srv0/gpu1, srv3/gpu0]"), 16,
     "workload.generators[0].senders", ["srv3/gpu0 and srv3/gpu1 are both on server srv3"]),
    ("incast-patterns-leave-nothing",
     edit("senders: [srv0/gpu1, srv1/gpu1]", "senders: ['srv3/*']"), 16,
     "workload.generators[0]", ["has no sender left", "receiver's server srv3"]),
    ("permutation-impossible",
     edit("kind: incast, senders: [srv0/gpu1, srv1/gpu1], receiver: srv3/gpu1",
          "kind: permutation, gpus: [srv0/gpu0, srv0/gpu1, srv1/gpu0]"), 16,
     "workload.generators[0]", ["srv0 holds 2 of the 3 GPUs", "at most half may share a server"]),
    ("all-to-all-one-server",
     edit("kind: incast, senders: [srv0/gpu1, srv1/gpu1], receiver: srv3/gpu1",
          "kind: all-to-all, gpus: ['srv0/*']"), 16, "workload.generators[0]",
     ["has no pair of GPUs on different servers"]),
    ("pairs-same-server",
     edit("kind: incast, senders: [srv0/gpu1, srv1/gpu1], receiver: srv3/gpu1",
          "kind: pairs, pairs: [[srv0/gpu1, srv0/gpu2]]"), 16, "workload.generators[0].pairs",
     ["both on server srv0"]),
    ("generated-starts-late", edit("size: 2MB}", "size: 2MB, start: 9s, stagger: 1s}"), 16,
     "workload.generators[0]", ["flow g0-1 starts at 10s, not before the end at 10s"]),
    ("no-flows", edit("flows:\n    - {id: f1, src: srv0/gpu0, dst: srv3/gpu0, size: 4MB, start: 0s}\n"
                      "  generators:\n    - {kind: incast, senders: [srv0/gpu1, srv1/gpu1], "
                      "receiver: srv3/gpu1, size: 2MB}\n", "flows: []\n").replace(
        "  - {at: 1s, kind: stop_flow, flow: f1}\n", ""), 12, "workload",
     ["makes no flows; give flows, generators or collectives"]),
    ("stop-unknown-flow", edit("flow: f1}", "flow: f9}"), 20, "events[2].flow",
     ["no flow 'f9'; flows are f1, g0-0, g0-1"]),
    ("stop-before-start", edit("start: 0s}", "start: 2s}"), 20, "events[2].at",
     ["1s is before flow f1 starts (2s)"]),
    ("stop-twice", edit("flow: f1}", "flow: f1}\n  - {at: 2s, kind: stop_flow, flow: f1}"), 21,
     "events[3]", ["flow f1 is already stopped by events[2]"]),
    ("event-after-end", edit("at: 3s, kind: link_up", "at: 11s, kind: link_up"), 19,
     "events[1].at", ["11s is not before the end at 10s"]),
    ("link-up-while-up", edit("at: 2s, kind: link_down", "at: 4s, kind: link_down"), 19,
     "events[1]", ["link [leaf-r0-0, spine0] is up at 3s", "needs an earlier link_down"]),
    ("link-down-twice", edit("kind: link_up", "kind: link_down"), 19, "events[1]",
     ["link [leaf-r0-0, spine0] is already down at 3s (events[0])"]),
    ("check-order-needs-number", edit('op: "==", value: 0', 'op: "<", value: yes'), 25,
     "expect_checks[0].value", ["true is not a number; op '<' compares numbers"]),
    ("min-rate-above-line", edit("dcqcn: {enabled: true,", "dcqcn: {enabled: true, min_rate: 1Gbps,"),
     11, "hosts.dcqcn.min_rate", ["1Gbps is above the host link rate 100Mbps"]),
]
# Problems with the file itself: (id, text, line or None, fragments).
FILE_CASES = [
    ("empty", "", None, ["a scenario is a mapping of keys", "not an empty document"]),
    ("list", "- a\n", None, ["a scenario is a mapping of keys", "not a list"]),
    ("yaml-syntax", "name: [x\n", 2, ["not valid YAML"]),
    ("yaml-tab", "name: x\n\tduration: 1s\n", 2, ["not valid YAML"]),
]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    return path


def test_base_is_valid(tmp_path):
    assert load_scenario(_write(tmp_path, BASE)).name == "bad"


@pytest.mark.parametrize("text, line, key, fragments",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_scenario_message(tmp_path, text, line, key, fragments):
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert message.startswith(f"{where}key '{key}': "), message
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("text, line, fragments", [case[1:] for case in FILE_CASES],
                         ids=[case[0] for case in FILE_CASES])
def test_bad_scenario_file(tmp_path, text, line, fragments):
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: ")
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize("text", [case[1] for case in CASES] + [case[1] for case in FILE_CASES],
                         ids=[case[0] for case in CASES] + [case[0] for case in FILE_CASES])
def test_cli_prints_one_line_and_exits_2(tmp_path, capsys, text):
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert main(["scenario", "check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"aifabric: {caught.value}\n"
    assert "Traceback" not in captured.err


def test_missing_file_and_directory(tmp_path, capsys):
    assert main(["scenario", "check", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == f"aifabric: {tmp_path / 'nope.yaml'}: no such scenario file\n"
    assert main(["scenario", "check", str(tmp_path)]) == 2
    assert "is a directory, not a scenario file" in capsys.readouterr().err


def test_errors_in_a_topology_file_name_that_file(tmp_path, capsys):
    topology = tmp_path / "topo.yaml"
    topology.write_text(RAIL_4X4.read_text().replace("spines: 2", "spines: 0"))
    path = _write(tmp_path, edit(f"topology: {RAIL_4X4}", "topology: topo.yaml"))
    assert main(["scenario", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aifabric: {topology}:") and "key 'spines'" in err


def test_fixing_errors_walks_down_the_file(tmp_path):
    """Of two errors in the shape, the one nearer the top is reported first."""
    text = edit("start: 0s}", "start: 0s, op: atomic}", edit("kind: link_down", "kind: sideways"))
    with pytest.raises(ScenarioError, match=r":14: key 'workload.flows\[0\].op'"):
        load_scenario(_write(tmp_path, text))
    text = edit("pmax: 0.2", "pmax: 2", BASE + "colour: red\n")
    with pytest.raises(ScenarioError, match=r":6: key 'switches.ecn.pmax'"):
        load_scenario(_write(tmp_path, text))


def test_bad_target_override(tmp_path):
    with pytest.raises(ScenarioError, match="target 'p4' is not known; use one of builtin, bmv2"):
        load_scenario(_write(tmp_path, BASE), target_override="p4")
