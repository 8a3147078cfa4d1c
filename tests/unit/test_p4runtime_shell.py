"""p4runtime-shell against the built-in target's P4Runtime server, as it is
used against BMv2: push the pipeline, program tables, read them back.

p4runtime-shell keeps one client and one P4Info in module globals
(``shell.client``, ``context``); each test calls ``setup`` and ``teardown``
itself, so the tests run one after the other in this process."""

import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

# Before p4runtime_sh: importing IPython puts IPython/extensions on sys.path,
# whose regular package "tests" would then shadow this namespace package.
from tests.unit.data.p4runtime.harness import Switch
from tests.unit.data.p4runtime.programs import DATA, KITCHEN_CPU_PORT

pytest.importorskip("p4runtime_sh")
import p4runtime_sh.shell as sh  # noqa: E402
from p4runtime_sh.global_options import global_options  # noqa: E402
from p4runtime_sh.p4runtime import P4RuntimeWriteException  # noqa: E402


@pytest.fixture
def shell(tmp_path):
    """A switch, then ``shell(program)`` runs ``setup`` pushing that program."""
    switch = Switch(device_id=1, cpu_port=KITCHEN_CPU_PORT)
    started = []

    def start(program: str) -> Switch:
        device_config = tmp_path / f"{program}.bin"
        device_config.write_bytes(program.encode())
        global_options.reset()
        sh.setup(device_id=1, grpc_addr=switch.address, election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(DATA / f"{program}.p4info.txtpb"),
                                         str(device_config)), verbose=False)
        started.append(True)
        return switch

    yield start
    if started:
        sh.teardown()
    switch.stop()


def udp(dst: str) -> bytes:
    return bytes(Ether(dst="00:00:00:00:01:01", src="08:00:00:00:01:11") /
                 IP(src="10.0.1.1", dst=dst) / UDP() / b"payload")


def test_basic_forwarding_programmed_with_the_shell(shell):
    switch = shell("basic")
    assert sh.APIVersion() == "1.4.1"
    te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
    te.match["hdr.ipv4.dstAddr"] = "10.0.2.0/24"
    te.action["dstAddr"] = "08:00:00:00:02:22"
    te.action["port"] = "2"
    te.insert()
    (read,) = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
    assert read.msg().match[0].lpm.prefix_len == 24
    assert read.msg().action.action.params[1].value == b"\x02"
    out = switch.device.inject(1, udp("10.0.2.7")).outputs
    assert [o.port for o in out] == [2] and Ether(out[0].data).dst == "08:00:00:00:02:22"

    with pytest.raises(P4RuntimeWriteException) as err:
        te.insert()
    assert "ALREADY_EXISTS" in str(err.value)

    default = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
    default.is_default = True
    default.action["dstAddr"] = "08:00:00:00:09:99"
    default.action["port"] = "9"
    default.modify()
    reader = sh.TableEntry("MyIngress.ipv4_lpm")
    reader.is_default = True
    (read_default,) = list(reader.read())
    assert read_default.msg().is_default_action
    assert read_default.msg().action.action.params[1].value == b"\x09"
    assert switch.device.inject(1, udp("10.9.9.9")).outputs[0].port == 9

    te.delete()
    assert list(sh.TableEntry("MyIngress.ipv4_lpm").read()) == []
    assert switch.device.inject(1, udp("10.0.2.7")).outputs[0].port == 9


def test_counters_profiles_pre_packet_io_and_digests_with_the_shell(shell):
    switch = shell("kitchen")
    for port in (1, 1, 2):
        switch.device.inject(port, udp("10.0.0.1"))
    counter = sh.CounterEntry("MyIngress.port_counter")
    counter.index = 1
    (one,) = list(counter.read())
    assert one.packet_count == 2
    assert len(list(sh.CounterEntry("MyIngress.port_counter").read())) == 16

    acl = sh.TableEntry("MyIngress.acl")(action="MyIngress.set_port")
    acl.match["standard_metadata.ingress_port"] = "1"
    acl.match["hdr.ethernet.dstAddr"] = "00:00:00:00:01:01&&&ff:ff:ff:ff:ff:ff"
    acl.priority = 5
    acl.action["port"] = "4"
    acl.insert()
    switch.device.inject(1, udp("10.0.0.1"))
    direct = sh.DirectCounterEntry("MyIngress.acl_counter")
    direct.table_entry.match["standard_metadata.ingress_port"] = "1"
    direct.table_entry.match["hdr.ethernet.dstAddr"] = "00:00:00:00:01:01&&&ff:ff:ff:ff:ff:ff"
    direct.table_entry.priority = 5
    (dc,) = list(direct.read())
    assert dc.packet_count == 1

    meter = sh.MeterEntry("MyIngress.port_meter")
    meter.index = 2
    meter.cir, meter.cburst, meter.pir, meter.pburst = 100, 10, 200, 20
    meter.modify()
    (read_meter,) = list(meter.read())
    assert read_meter.pir == 200

    member = sh.ActionProfileMember("MyIngress.ecmp_selector")(
        member_id=1, action="MyIngress.set_port")
    member.action["port"] = "7"
    member.insert()
    group = sh.ActionProfileGroup("MyIngress.ecmp_selector")(group_id=1)
    group.add(1, weight=2)
    group.insert()
    ecmp = sh.TableEntry("MyIngress.ecmp")
    ecmp.match["hdr.ipv4.dstAddr"] = "10.0.0.9"
    ecmp.group_id = 1
    ecmp.insert()
    assert switch.device.inject(3, udp("10.0.0.9")).outputs[0].port == 7
    (read_group,) = list(sh.ActionProfileGroup("MyIngress.ecmp_selector").read())
    assert read_group.msg().members[0].weight == 2

    mcast = sh.MulticastGroupEntry(3).add(5, 1).add(6, 1)
    mcast.insert()
    (read_mcast,) = list(sh.MulticastGroupEntry(3).read())
    assert [r.egress_port for r in read_mcast.replicas] == [5, 6]
    clone = sh.CloneSessionEntry(4).add(KITCHEN_CPU_PORT, 1)
    clone.insert()
    assert len(list(sh.CloneSessionEntry().read())) == 1

    sh.PacketOut(payload=udp("10.0.0.1"), egress_port="8", _pad="0").send()
    deadline = time.monotonic() + 3
    while (8, udp("10.0.0.1")) not in switch.device.sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (8, udp("10.0.0.1")) in switch.device.sent

    to_cpu = sh.TableEntry("MyIngress.acl")(action="MyIngress.to_cpu")
    to_cpu.match["standard_metadata.ingress_port"] = "11"
    to_cpu.priority = 1
    to_cpu.insert()
    packet_in = sh.PacketIn()
    switch.device.inject(11, udp("10.0.0.1"))
    (msg,) = list(packet_in.sniff(timeout=1))
    assert msg.packet.payload == udp("10.0.0.1")
    assert msg.packet.metadata[0].value == b"\x0b"

    digest = sh.DigestEntry("learn_t")
    digest.max_list_size = 1
    digest.ack_timeout_ns = 10**9
    digest.insert()
    (read_digest,) = list(sh.DigestEntry("learn_t").read())
    assert read_digest.max_list_size == 1
    digests = sh.DigestList()
    switch.device.inject(12, udp("10.0.0.1"))
    (listed,) = list(digests.sniff(timeout=1))
    assert listed.digest.data[0].struct.members[1].bitstring == b"\x0c"
