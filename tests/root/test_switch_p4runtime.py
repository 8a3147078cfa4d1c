"""P4Runtime against a real ``aifabric-switch`` process on veths.

A v1model program (the tutorials' basic IPv4 forwarding, plus an indexed
counter of received packets per ingress port and a direct counter on the
LPM table) is compiled with ``aifabric p4 compile`` and pushed over
P4Runtime, by p4runtime-shell (in a subprocess: it keeps global state) and
by the controller's :class:`~emulator.control.client.SwitchClient`. Frames
go in at port 1 from host namespace h1 (scapy ``sendp`` in the namespace)
and are caught at port 2 in h2. Then robustness: invalid requests, junk
frames, a program change under traffic, SIGTERM. Layout: see
:mod:`tests.root.switch_p4rt_net`.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emulator.control.client import P4RuntimeError, SwitchClient
from emulator.control.encode import Encoder, updates
from emulator.control.fabric_plan import CloneSession, SwitchPlan, TableEntry, mac_int
from emulator.p4.p4info.index import P4InfoIndex
from emulator.targets.builtin.queue_control import QueueControlClient

from tests.root import switch_p4rt_net as netlib
from tests.root.switch_p4rt_net import H_MAC, forwarded, ipv4_checksum, udp_frame

pytestmark = pytest.mark.root

SHELL_SCRIPT = netlib.HERE / "switch_p4rt_shell.py"
SWITCH_MAC = "00:00:00:00:01:01"     # the dst MAC hosts send to; becomes the src MAC
ROUTE_MAC = H_MAC[2]                 # 08:00:00:00:02:22, the route's new dst MAC
SUBNET_MAC = "08:00:00:00:02:77"     # the /24 route's dst MAC (controller test)
V2_MAC = "08:00:00:00:02:99"         # the new program's dst MAC
V2_TOS = 0xB8

BASIC_P4 = r"""
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x800;
typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

header ethernet_t { macAddr_t dstAddr; macAddr_t srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    ip4Addr_t srcAddr; ip4Addr_t dstAddr;
}
struct metadata { }
struct headers { ethernet_t ethernet; ipv4_t ipv4; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets_and_bytes) rx_port_counter;
    direct_counter(CounterType.packets_and_bytes) lpm_counter;

    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        counters = lpm_counter;
        default_action = drop();
    }
    apply {
        rx_port_counter.count((bit<32>) standard_metadata.ingress_port);
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        } else {
            drop();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
"""


def _v2(source: str) -> str:
    """The second program: an exact-match host table whose forward action
    also sets diffserv."""
    for old, new in (("ipv4_lpm", "ipv4_host"), ("dstAddr: lpm", "dstAddr: exact"),
                     ("lpm_counter", "host_counter"),
                     ("hdr.ipv4.ttl = hdr.ipv4.ttl - 1;",
                      f"hdr.ipv4.ttl = hdr.ipv4.ttl - 1; hdr.ipv4.diffserv = {V2_TOS};")):
        assert old in source
        source = source.replace(old, new)
    return source


class Program:
    def __init__(self, directory: Path, name: str, source: str) -> None:
        self.p4 = directory / f"{name}.p4"
        self.p4.write_text(source)
        self.json = directory / f"{name}.json"
        self.p4info_path = directory / f"{name}.p4info.txtpb"

    def compile(self) -> subprocess.Popen:
        return subprocess.Popen(
            [str(netlib.VENV_BIN / "aifabric"), "p4", "compile", str(self.p4), "-o", str(self.json),
             "--p4info", str(self.p4info_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)

    @property
    def p4info(self) -> p4info_pb2.P4Info:
        return text_format.Parse(self.p4info_path.read_text(), p4info_pb2.P4Info())

    @property
    def device_config(self) -> bytes:
        return self.json.read_bytes()


# ---- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Program]:
    tmp = tmp_path_factory.mktemp("switch-p4rt")
    progs = {"basic": Program(tmp, "basic", BASIC_P4), "v2": Program(tmp, "v2", _v2(BASIC_P4))}
    running = {name: p.compile() for name, p in progs.items()}
    for name, proc in running.items():
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, f"aifabric p4 compile {name}: {out}"
    return progs


@pytest.fixture(scope="module")
def net():
    n = netlib.make_net()
    try:
        yield n
    finally:
        netlib.destroy_net(n)


@pytest.fixture
def switch(net, tmp_path):
    sw = netlib.start_switch(net, tmp_path / "switch.log")
    try:
        yield sw
    finally:
        rc = sw.stop()
        for pid in netlib.pids_with(sw.marker):  # should never happen; never leave one
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert rc == 0, f"switch exit status {rc}:\n{sw.log_text()}"
    assert "Traceback" not in sw.log_text(), sw.log_text()


@pytest.fixture
def sniffer(net):
    s = netlib.Sniffer(net.hosts[2])
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def clients():
    made: list[SwitchClient] = []

    def make(address: str, election: tuple[int, int] = (0, 1)) -> SwitchClient:
        c = SwitchClient("sw", address, 0, election_id=election, timeout_s=10)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


# ---- helpers ------------------------------------------------------------------------------------
def assert_alive(sw: netlib.SwitchProc) -> None:
    assert sw.alive(), f"switch died ({sw.proc.returncode}):\n{sw.log_text()}"
    channel = grpc.insecure_channel(sw.address)
    try:
        caps = p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
            p4runtime_pb2.CapabilitiesRequest(), timeout=5)
    finally:
        channel.close()
    assert caps.p4runtime_api_version


def expected(sent: bytes, dst_mac: str = ROUTE_MAC, tos: int | None = None) -> bytes:
    return forwarded(sent, dst_mac=dst_mac, src_mac=SWITCH_MAC, tos=tos)


def check_ipv4(frame: bytes) -> None:
    assert ipv4_checksum(frame[14:34]) == 0, f"bad IPv4 checksum in {frame[14:34].hex()}"


def table_entry(encoder: Encoder, prefix: str, plen: int, mac: str, port: int
                ) -> p4runtime_pb2.Entity:
    """Through the controller's Encoder, from names and ints."""
    value = int.from_bytes(socket.inet_aton(prefix), "big")
    return encoder.table_entry(TableEntry(
        "MyIngress.ipv4_lpm", (("hdr.ipv4.dstAddr", (value, plen)),), "MyIngress.ipv4_forward",
        (("dstAddr", int(mac.replace(":", ""), 16)), ("port", port))))


def raw_update(p4info: p4info_pb2.P4Info, text: str) -> p4runtime_pb2.Update:
    """A hand-built Update (text format; ``$table``/``$forward`` replaced by ids)."""
    ids = {"$table": p4info.tables[0].preamble.id,
           "$forward": next(a.preamble.id for a in p4info.actions
                            if a.preamble.name.endswith("ipv4_forward"))}
    for key, value in ids.items():
        text = text.replace(key, str(value))
    return text_format.Parse(text, p4runtime_pb2.Update())


def counter_cell(client: SwitchClient, p4info: p4info_pb2.P4Info, port: int) -> tuple[int, int]:
    entity = p4runtime_pb2.Entity()
    entity.counter_entry.counter_id = p4info.counters[0].preamble.id
    entity.counter_entry.index.index = port
    (cell,) = list(client.read([entity]))
    return cell.counter_entry.data.packet_count, cell.counter_entry.data.byte_count


def direct_cells(client: SwitchClient, p4info: p4info_pb2.P4Info) -> dict[str, tuple[int, int]]:
    entity = p4runtime_pb2.Entity()
    entity.direct_counter_entry.table_entry.table_id = p4info.tables[0].preamble.id
    out = {}
    for cell in client.read([entity]):
        m = cell.direct_counter_entry.table_entry.match[0]
        key = m.lpm.value.hex() + "/" + str(m.lpm.prefix_len) if m.HasField("lpm") \
            else m.exact.value.hex()
        out[key] = (cell.direct_counter_entry.data.packet_count,
                    cell.direct_counter_entry.data.byte_count)
    return out


def program_basic(client: SwitchClient, prog: Program) -> None:
    """Push the basic program with its /32 route to port 2."""
    p4info = prog.p4info
    client.set_pipeline(p4info, prog.device_config)
    encoder = Encoder(P4InfoIndex(p4info))
    client.write(updates(encoder, [table_entry(encoder, "10.0.2.2", 32, ROUTE_MAC, 2)]))


def ip_ident(frame: bytes) -> int:
    return int.from_bytes(frame[18:20], "big")


def forwards(net: netlib.Net, sniffer: netlib.Sniffer, ident: int) -> bytes | None:
    """Send one frame to 10.0.2.2; the frame that came out of port 2, if any."""
    sniffer.drain()
    frame = udp_frame("10.0.2.2", ident=ident)
    net.send(1, frame)
    got = sniffer.collect(3, want=1)
    return got[0] if got else None


class ShellProcess:
    """``switch_p4rt_shell.py``: JSON lines out, commands in."""

    def __init__(self, address: str, prog: Program) -> None:
        self.stderr = tempfile.TemporaryFile()  # never blocks the script, unlike a pipe
        self.proc = subprocess.Popen(
            [sys.executable, str(SHELL_SCRIPT), address, str(prog.p4info_path), str(prog.json)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            cwd=str(netlib.HERE))

    def reply(self, timeout: float = 20) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            self.proc.wait(5)
            self.stderr.seek(0)
            raise AssertionError("no answer from the shell script: "
                                 + self.stderr.read().decode(errors="replace"))
        answer = json.loads(line)
        assert "error" not in answer, answer.get("trace", answer["error"])
        return answer

    def command(self, cmd: str) -> dict:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.reply()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        self.stderr.close()


# ---- 1. p4runtime-shell -------------------------------------------------------------------------
def test_p4runtime_shell_programs_the_switch(programs, net, switch, sniffer, clients):
    basic = programs["basic"]
    shell = ShellProcess(switch.address, basic)
    try:
        setup = shell.reply()
        assert setup["api"] == "1.4.1"
        assert "ALREADY_EXISTS" in setup["duplicate_error"]
        assert setup["entries"] == [{
            "match": [{"field_id": 1, "value": "0a000202", "prefix_len": 32}],
            "action_id": setup["action_id"], "params": {"1": "080000000222", "2": "02"}}]

        sniffer.drain()
        sent = udp_frame("10.0.2.2", ident=11)
        net.send(1, sent)
        (got,) = sniffer.collect(3, want=1)
        assert got == expected(sent), f"\n got {got.hex()}\nwant {expected(sent).hex()}"
        check_ipv4(got)
        assert got[22] == sent[22] - 1  # TTL
        counts = shell.command("counters")
        assert counts["rx"] == {"1": [1, len(sent)], "2": [0, 0]}
        assert counts["direct"] == [{"match": ["0a000202/32"], "packets": 1, "bytes": len(sent)}]

        # Unknown destination, then a known one: only the second comes out.
        unknown, known = udp_frame("10.0.9.9", ident=12), udp_frame("10.0.2.2", ident=13)
        net.send(1, unknown, known)
        got = sniffer.collect(1.5, want=2)
        assert got == [expected(known)], [g.hex() for g in got]
        counts = shell.command("counters")
        assert counts["rx"] == {"1": [3, len(sent) + len(unknown) + len(known)], "2": [0, 0]}
        assert counts["direct"] == [{"match": ["0a000202/32"], "packets": 2,
                                     "bytes": len(sent) + len(known)}]
        assert shell.command("reconnect") == {"entries": setup["entries"]}
        # A controller that dies without closing its stream: its election id
        # is free again at once, and the forwarding state stays.
        shell.proc.kill()
        shell.proc.wait(5)
    finally:
        shell.close()
    deadline = time.monotonic() + 5
    while True:
        client = clients(switch.address, (0, 1))
        try:
            client.connect()
            break
        except P4RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    read = p4runtime_pb2.Entity()
    read.table_entry.table_id = setup["table_id"]
    (entry,) = client.read([read])
    assert entry.table_entry.match[0].lpm.value == bytes([10, 0, 2, 2])
    assert forwards(net, sniffer, 14) == expected(udp_frame("10.0.2.2", ident=14))
    assert_alive(switch)


# ---- 2. the controller's SwitchClient -----------------------------------------------------------
def test_switch_client_programs_the_switch(programs, net, switch, sniffer, clients):
    basic = programs["basic"]
    p4info = basic.p4info
    client = clients(switch.address)
    client.connect()
    client.set_pipeline(p4info, basic.device_config, cookie=7)
    encoder = Encoder(P4InfoIndex(p4info))
    host = table_entry(encoder, "10.0.2.2", 32, ROUTE_MAC, 2)
    # The controller's path: a plan (a clone session and the /32 route) through the Encoder.
    plan = SwitchPlan("sw", clone_sessions=[CloneSession(5, ((2, 1),))], entries=[TableEntry(
        "MyIngress.ipv4_lpm", (("hdr.ipv4.dstAddr", (0x0A000202, 32)),), "MyIngress.ipv4_forward",
        (("dstAddr", mac_int(ROUTE_MAC)), ("port", 2)))])
    plan_updates = encoder.plan_updates(plan)
    assert plan_updates[1].entity == host
    # Hand-built: 10.0.2.0/24 -> port 2, dst MAC 08:00:00:00:02:77.
    subnet = raw_update(p4info, """
        type: INSERT
        entity { table_entry {
            table_id: $table
            match { field_id: 1 lpm { value: "\\n\\000\\002\\000" prefix_len: 24 } }
            action { action { action_id: $forward
                params { param_id: 1 value: "\\010\\000\\000\\000\\002\\167" }
                params { param_id: 2 value: "\\002" } } } } }""")
    assert client.write(plan_updates + [subnet]) == 3
    # A non-canonical bytestring (leading zero bytes) is accepted; reads are canonical.
    padded = raw_update(p4info, """
        type: INSERT
        entity { table_entry {
            table_id: $table
            match { field_id: 1 lpm { value: "\\000\\n\\000\\006\\000" prefix_len: 24 } }
            action { action { action_id: $forward
                params { param_id: 1 value: "\\000\\000\\001" }
                params { param_id: 2 value: "\\000\\003" } } } } }""")
    client.write([padded])

    read = p4runtime_pb2.Entity()
    read.table_entry.table_id = p4info.tables[0].preamble.id
    entries = {(m.lpm.value, m.lpm.prefix_len): e.table_entry
               for e in client.read([read]) for m in e.table_entry.match}
    assert sorted(entries) == [(bytes([10, 0, 2, 0]), 24), (bytes([10, 0, 2, 2]), 32),
                               (bytes([10, 0, 6, 0]), 24)]
    assert entries[bytes([10, 0, 2, 2]), 32] == host.table_entry
    assert entries[bytes([10, 0, 2, 0]), 24] == subnet.entity.table_entry
    canonical = entries[bytes([10, 0, 6, 0]), 24]
    assert [p.value for p in canonical.action.action.params] == [b"\x01", b"\x03"]
    delete = p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE)
    delete.entity.table_entry.CopyFrom(canonical)
    client.write([delete])
    assert len(list(client.read([read]))) == 2

    sniffer.drain()
    to_host, to_subnet, lost = (udp_frame("10.0.2.2", ident=21), udp_frame("10.0.2.7", ident=22),
                                udp_frame("10.0.3.3", ident=23))
    net.send(1, to_host, lost, to_subnet)
    got = sniffer.collect(1.0, want=3)
    assert got == [expected(to_host), expected(to_subnet, SUBNET_MAC)], [g.hex() for g in got]
    for frame in got:
        check_ipv4(frame)
    total = len(to_host) + len(to_subnet) + len(lost)
    assert counter_cell(client, p4info, 1) == (3, total)
    assert counter_cell(client, p4info, 2) == (0, 0)
    every = encoder.counter_read("MyIngress.rx_port_counter")
    cells = {c.counter_entry.index.index: c.counter_entry.data for c in client.read([every])}
    assert sorted(cells) == list(range(512))
    assert [i for i, d in cells.items() if d.packet_count] == [1]
    clone = p4runtime_pb2.Entity()
    clone.packet_replication_engine_entry.clone_session_entry.session_id = 5
    (session,) = client.read([clone])
    assert session == plan_updates[0].entity
    # The pipeline config as pushed, with its cookie.
    config = client.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0), timeout=10).config
    assert config.p4info == p4info and config.p4_device_config == basic.device_config
    assert config.cookie.cookie == 7
    assert direct_cells(client, p4info) == {"0a000202/32": (1, len(to_host)),
                                            "0a000200/24": (1, len(to_subnet))}
    assert_alive(switch)


# ---- 3. robustness ------------------------------------------------------------------------------
def _write_error(client: SwitchClient, update: p4runtime_pb2.Update) -> P4RuntimeError:
    with pytest.raises(P4RuntimeError) as err:
        client.write([update])
    return err.value


def test_invalid_requests_are_grpc_errors(programs, net, switch, sniffer, clients):
    basic = programs["basic"]
    p4info = basic.p4info
    primary = clients(switch.address, (0, 5))
    primary.connect()
    program_basic(primary, basic)

    # Unknown table id.
    err = _write_error(primary, raw_update(p4info, """
        type: INSERT entity { table_entry { table_id: 12345
            action { action { action_id: $forward } } } }"""))
    # PI (BMv2) answers INVALID_ARGUMENT ("Invalid P4 id"); NOT_FOUND would do too.
    assert err.details and err.details[0][1] in ("INVALID_ARGUMENT", "NOT_FOUND"), err
    assert err.code == "UNKNOWN" and "12345" in err.details[0][2], err
    # Bytestrings: a 5-byte IPv4 address, a port wider than 9 bits.
    err = _write_error(primary, raw_update(p4info, """
        type: INSERT entity { table_entry { table_id: $table
            match { field_id: 1 lpm { value: "\\001\\n\\000\\003\\000" prefix_len: 24 } }
            action { action { action_id: $forward
                params { param_id: 1 value: "\\001" } params { param_id: 2 value: "\\001" } } } } }
        """))
    assert err.details and err.details[0][1] in ("INVALID_ARGUMENT", "OUT_OF_RANGE"), err
    err = _write_error(primary, raw_update(p4info, """
        type: INSERT entity { table_entry { table_id: $table
            match { field_id: 1 lpm { value: "\\n\\000\\003\\000" prefix_len: 24 } }
            action { action { action_id: $forward
                params { param_id: 1 value: "\\001" }
                params { param_id: 2 value: "\\004\\000" } } } } }
        """))
    assert err.details and err.details[0][1] in ("INVALID_ARGUMENT", "OUT_OF_RANGE"), err
    # Unknown device id (the RPC's own status).
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel := grpc.insecure_channel(switch.address))
    try:
        bad_device = p4runtime_pb2.WriteRequest(device_id=9, election_id=primary.election_id)
        bad_device.updates.append(
            raw_update(p4info, "type: DELETE entity { table_entry { table_id: $table } }"))
        with pytest.raises(grpc.RpcError) as rpc:
            stub.Write(bad_device, timeout=5)
        assert rpc.value.code() == grpc.StatusCode.NOT_FOUND

        # A backup controller (lower election id) may not write; neither may
        # an unknown election id without a stream.
        requests: queue.Queue = queue.Queue()
        stream = stub.StreamChannel(iter(requests.get, None), timeout=20)
        hello = p4runtime_pb2.StreamMessageRequest()
        hello.arbitration.device_id = 0
        hello.arbitration.election_id.low = 2
        requests.put(hello)
        answer = next(stream)
        assert answer.arbitration.status.code == code_pb2.ALREADY_EXISTS  # backup
        assert answer.arbitration.election_id.low == 5  # the primary's id
        good = table_entry(Encoder(P4InfoIndex(p4info)), "10.0.4.0", 24, ROUTE_MAC, 2)
        for low in (2, 9):
            request = p4runtime_pb2.WriteRequest(device_id=0)
            request.election_id.low = low
            request.updates.append(updates(Encoder(P4InfoIndex(p4info)), [good])[0])
            with pytest.raises(grpc.RpcError) as rpc:
                stub.Write(request, timeout=5)
            assert rpc.value.code() == grpc.StatusCode.PERMISSION_DENIED, rpc.value
        with pytest.raises(grpc.RpcError) as rpc:
            stub.SetForwardingPipelineConfig(p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=0, election_id=p4runtime_pb2.Uint128(low=2),
                action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                config=p4runtime_pb2.ForwardingPipelineConfig(p4info=p4info)), timeout=5)
        assert rpc.value.code() == grpc.StatusCode.PERMISSION_DENIED
        requests.put(None)
        stream.cancel()
        # The controller's client refuses to go on as a backup.
        with pytest.raises(P4RuntimeError) as err:
            clients(switch.address, (0, 3)).connect()
        assert err.value.code == "ALREADY_EXISTS", err.value

        # Bytes that are no protobuf at all.
        raw_write = channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=None,
                                        response_deserializer=None)
        with pytest.raises(grpc.RpcError) as rpc:
            raw_write(b"\xff\xff\xff\xff\x0f", timeout=5)
        assert rpc.value.code() != grpc.StatusCode.OK

        # Reads: unknown table and counter ids.
        for text in ("table_entry { table_id: 777 }", "counter_entry { counter_id: 778 }"):
            request = p4runtime_pb2.ReadRequest(device_id=0)
            request.entities.append(text_format.Parse(text, p4runtime_pb2.Entity()))
            with pytest.raises(grpc.RpcError) as rpc:
                list(stub.Read(request, timeout=5))
            assert rpc.value.code() in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INVALID_ARGUMENT,
                                        grpc.StatusCode.NOT_FOUND), rpc.value
    finally:
        channel.close()

    # A device config that is not one: refused, the running program stays.
    with pytest.raises(P4RuntimeError) as err:
        primary.set_pipeline(p4info, b"\x00garbage{")
    assert err.value.code == "INVALID_ARGUMENT", err.value
    # The primary's good write still works, and the switch still forwards.
    assert primary.write(updates(Encoder(P4InfoIndex(p4info)), [good])) == 1
    assert forwards(net, sniffer, 31) == expected(udp_frame("10.0.2.2", ident=31))
    assert_alive(switch)


def test_many_controllers_connected(programs, net, switch, sniffer, clients):
    """Each open StreamChannel holds a server thread: with a primary and
    seven backups connected, Write, Read and QueueControl still answer."""
    primary = clients(switch.address, (0, 100))
    primary.connect()
    channel = grpc.insecure_channel(switch.address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    backups = []
    try:
        for low in range(1, 8):
            requests: queue.Queue = queue.Queue()
            stream = stub.StreamChannel(iter(requests.get, None), timeout=30)
            hello = p4runtime_pb2.StreamMessageRequest()
            hello.arbitration.device_id = 0
            hello.arbitration.election_id.low = low
            requests.put(hello)
            backups.append((requests, stream))
            assert next(stream).arbitration.status.code == code_pb2.ALREADY_EXISTS
        program_basic(primary, programs["basic"])
        assert counter_cell(primary, programs["basic"].p4info, 1) == (0, 0)
        with QueueControlClient(switch.address, timeout_s=5) as qc:
            assert qc.get_port_stats([1])["ports"][0]["port"] == 1
        got = forwards(net, sniffer, 71)
        assert got == expected(udp_frame("10.0.2.2", ident=71))
    finally:
        for requests, stream in backups:
            requests.put(None)
            stream.cancel()
        channel.close()
    assert_alive(switch)


def test_truncated_and_random_frames(programs, net, switch, sniffer, clients):
    client = clients(switch.address)
    client.connect()
    program_basic(client, programs["basic"])
    with QueueControlClient(switch.address) as qc:
        qc.reset_stats()
        out = net.ns_python(1, "junk", "eth0", "300", "7").stdout
        sent = int(out.strip())
        assert sent >= 250, out
        deadline = time.monotonic() + 3
        while True:
            stats = qc.get_port_stats([1])
            (port,) = stats["ports"]
            if port["rx_packets"] >= sent or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert port["rx_packets"] == sent, port
    # Dropped by the program (parser errors, no route), never by an executor error.
    assert port["drops"]["pipeline"] == sent and port["drops"]["pipeline_error"] == 0, port
    assert stats["executor_errors"] == 0, stats
    assert_alive(switch)
    got = forwards(net, sniffer, 41)
    assert got == expected(udp_frame("10.0.2.2", ident=41))
    assert_alive(switch)


def test_new_program_under_traffic(programs, net, switch, sniffer, clients):
    basic, v2 = programs["basic"], programs["v2"]
    client = clients(switch.address)
    client.connect()
    program_basic(client, basic)
    sniffer.drain()
    frames = [udp_frame("10.0.2.2", ident=50 + i) for i in range(4)]
    rate, seconds = 200, 4.0
    loop = net.ns_python(1, "loop", "eth0", str(rate), str(seconds), *(f.hex() for f in frames),
                         background=True)
    received: list[tuple[float, bytes]] = []
    stop = threading.Event()

    def collect() -> None:
        while not stop.is_set():
            for f in sniffer.collect(0.1):
                received.append((time.monotonic(), f))

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 5
        while not received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert received, "no traffic under the first program"
        time.sleep(0.5)
        p4info2 = v2.p4info
        client.set_pipeline(p4info2, v2.device_config)
        switched = time.monotonic()
        request = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        te = request.entity.table_entry
        te.table_id = p4info2.tables[0].preamble.id
        match = te.match.add()
        match.field_id = 1
        match.exact.value = bytes([10, 0, 2, 2])
        te.action.action.action_id = next(a.preamble.id for a in p4info2.actions
                                          if a.preamble.name == "MyIngress.ipv4_forward")
        te.action.action.params.add(param_id=1, value=bytes.fromhex(V2_MAC.replace(":", "")))
        te.action.action.params.add(param_id=2, value=b"\x02")
        client.write([request])
        out, err = loop.communicate(timeout=15)
        assert loop.returncode == 0, err
        time.sleep(0.3)
    finally:
        stop.set()
        reader.join(2)
        if loop.poll() is None:
            loop.kill()
            loop.wait(5)
    by_ident = {ip_ident(f): f for f in frames}
    old = [f for _, f in received if f == expected(by_ident[ip_ident(f)])]
    new = [f for _, f in received if f == expected(by_ident[ip_ident(f)], V2_MAC, V2_TOS)]
    assert len(old) + len(new) == len(received), "frames of neither program"
    # Program 1's frames all come before program 2's.
    kinds = ["old" if f in old else "new" for _, f in received]
    assert kinds == sorted(kinds, key=lambda k: k == "new"), kinds
    assert old and len(new) >= 20, (len(old), len(new), int(out))
    assert len(old) + len(new) >= int(out) - 100, (len(old), len(new), int(out))
    assert all(t >= switched for t, f in received if f in new)
    for f in new[:5]:
        check_ipv4(f)
    assert_alive(switch)
    after = forwards(net, sniffer, 59)
    assert after == expected(udp_frame("10.0.2.2", ident=59), V2_MAC, V2_TOS)
    with pytest.raises(P4RuntimeError):  # the old table is gone
        program = Encoder(P4InfoIndex(basic.p4info))
        client.write(updates(program, [table_entry(program, "10.0.5.0", 24, ROUTE_MAC, 2)]))
    assert_alive(switch)


def test_sigterm_stops_the_switch(programs, net, switch, sniffer, clients):
    client = clients(switch.address)
    client.connect()
    program_basic(client, programs["basic"])
    loop = net.ns_python(1, "loop", "eth0", "100", "3",
                         udp_frame("10.0.2.2", ident=60).hex(), background=True)
    try:
        time.sleep(1.5)  # the stream of a connected controller and traffic: both under way
        start = time.monotonic()
        switch.proc.send_signal(signal.SIGTERM)
        rc = switch.proc.wait(5)
        took = time.monotonic() - start
    finally:
        loop.communicate(timeout=10)
    assert rc == 0, switch.log_text()
    assert took < 2.5, took
    assert netlib.pids_with(switch.marker) == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(switch.address.rsplit(":", 1)[1])), 1).close()
    assert "switch stopped" in switch.log_text()
