"""``aifabric p4 run``: packets in, JSON out, clear errors."""

import json
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emulator.cli.main import main

PROGRAM = Path(__file__).parent / "p4" / "programs" / "basic_forwarding.p4"
RUNTIME = {"table_entries": [
    {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.1.1", 32]},
     "action_name": "MyIngress.ipv4_forward",
     "action_params": {"dstAddr": "08:00:00:00:01:11", "port": 1}}]}


def test_run_json_outputs_in_order(tmp_path, capsys):
    entries = tmp_path / "s1-runtime.json"
    entries.write_text(json.dumps(RUNTIME))
    hit = bytes(Ether() / IP(dst="10.0.1.1", ttl=9) / UDP())
    miss = bytes(Ether() / IP(dst="10.0.9.9") / UDP())
    code = main(["p4", "run", str(PROGRAM), "--entries", str(entries), "--json",
                 "--packet", f"2:{hit.hex()}", "--packet", f"2:{miss.hex()}"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["dropped"] == 1
    assert [o["port"] for o in result["outputs"]] == [1]
    out = Ether(bytes.fromhex(result["outputs"][0]["hex"]))
    assert out.dst == "08:00:00:00:01:11" and out[IP].ttl == 8


@pytest.mark.parametrize("packet,message", [
    ("x:00", "port 'x' is not a number"),
    ("1", "expected PORT:HEX"),
    ("1:zz", "is not hex bytes"),
    ("600:00", "port must be 0..511"),
])
def test_bad_packet_arguments(packet, message, capsys):
    assert main(["p4", "run", str(PROGRAM), "--packet", packet]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_entries_file_is_one_line(tmp_path, capsys):
    entries = tmp_path / "bad.json"
    entries.write_text('{"table_entries": [{"table": "MyIngress.nope", "action_name": "x"}]}')
    assert main(["p4", "run", str(PROGRAM), "--entries", str(entries), "--packet", "1:00"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown table 'MyIngress.nope'" in err


ANONYMOUS_SELECTOR = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> a; bit<32> b; }
struct hs { h_t h; }
struct m_t { }
parser P(packet_in p, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; } }
control VC(inout hs hdr, inout m_t m) { apply {} }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a: exact; hdr.h.b: selector; }
        actions = { fwd; }
        implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w14);
    }
    apply { t.apply(); }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) { apply {} }
control CC(inout hs hdr, inout m_t m) { apply {} }
control D(packet_out p, in hs hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_anonymous_selector_runs_but_has_no_p4info(tmp_path, capsys):
    # As with p4c: the program is valid, only P4Info generation refuses it.
    source = tmp_path / "anon.p4"
    source.write_text(ANONYMOUS_SELECTOR)
    assert main(["p4", "run", str(source), "--packet", "1:0000000100000002"]) == 0
    capsys.readouterr()
    assert main(["p4", "compile", str(source), "-o", str(tmp_path / "anon.json")]) == 1
    err = capsys.readouterr().err
    assert "has no @name annotation" in err and "Traceback" not in err
