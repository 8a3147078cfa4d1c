"""PTF tests of the relay exercise's solution (``../exercise/solution/relay.p4``),
run by ``ptf --test-dir`` against a switch started with ``--no-p4``, as the
p4lang tutorials run their PTF tests against ``simple_switch_grpc``: every
test connects, becomes primary with election id 1, pushes the pipeline
(inside a ``p4.tmp.P4DeviceConfig``), writes its entries and closes.

Test parameters: ``grpcaddr`` (default 127.0.0.1:9559), ``p4info`` (text
P4Info) and ``config`` (the device config from ``aifabric p4 compile``).
Needs the repository on ``PYTHONPATH`` (for :mod:`tests.tutorial_kit`).
"""

import struct

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from tests.tutorial_kit.controller import Connection, P4InfoNames

ETHERTYPE_RELAY = 0x88B5
SWITCH_MAC, HOST_MAC = "00:00:00:00:0a:01", "00:00:00:00:0b:02"
NEXT_MAC = "08:00:00:00:02:22"


def relay_frame(hop_id: int, payload: bytes = b"relayed") -> Ether:
    return (Ether(dst="ff:ff:ff:ff:ff:ff", src=HOST_MAC, type=ETHERTYPE_RELAY) /
            struct.pack("!HH", hop_id, 0x0800) / IP(src="10.0.1.1", dst="10.0.3.3") /
            UDP(sport=4000, dport=5000) / payload)


class RelayTest(BaseTest):
    def setUp(self):
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        address = tu.test_param_get("grpcaddr") or "127.0.0.1:9559"
        self.names = P4InfoNames(tu.test_param_get("p4info"))
        self.sw = Connection(address, device_id=0)
        answer = self.sw.arbitrate()
        assert answer.status.code == 0, answer
        self.sw.set_pipeline(self.names.p4info, tu.test_param_get("config"))

    def tearDown(self):
        self.sw.close()

    def add_route(self, prefix: str, prefix_len: int, mac: str, port: int) -> None:
        self.sw.write(self.names.table_entry(
            "RelayIngress.routes", "RelayIngress.route", {"next_mac": mac, "port": port},
            match={"hdr.ipv4.dst": (prefix, prefix_len)}))

    def add_hop(self, hop_id: int, port: int) -> None:
        self.sw.write(self.names.table_entry(
            "RelayIngress.hops", "RelayIngress.to_port", {"port": port},
            match={"hdr.relay.hop_id": [hop_id]}))


def routed(dst: str, ttl: int, **fields):  # type: ignore[no-untyped-def]
    return tu.simple_udp_packet(ip_dst=dst, ip_ttl=ttl, **fields)


class DropsWithoutEntries(RelayTest):
    """An empty table's default action (discard) drops IPv4 and relay frames."""

    def runTest(self):
        tu.send_packet(self, 1, routed("10.0.2.2", 64, eth_dst=SWITCH_MAC, eth_src=HOST_MAC))
        tu.send_packet(self, 2, relay_frame(7))
        tu.verify_no_other_packets(self)


class RoutesAndDecrementsTtl(RelayTest):
    def runTest(self):
        self.add_route("10.0.2.2", 32, NEXT_MAC, 2)
        sent = routed("10.0.2.2", 64, eth_dst=SWITCH_MAC, eth_src=HOST_MAC)
        tu.send_packet(self, 1, sent)
        tu.verify_packets(self, routed("10.0.2.2", 63, eth_dst=NEXT_MAC, eth_src=SWITCH_MAC), [2])


class LongestPrefixWins(RelayTest):
    def runTest(self):
        self.add_route("10.0.0.0", 8, "08:00:00:00:00:08", 3)
        self.add_route("10.0.2.0", 24, "08:00:00:00:00:18", 4)
        tu.send_packet(self, 0, routed("10.0.2.9", 9, eth_dst=SWITCH_MAC, eth_src=HOST_MAC))
        tu.verify_packets(self, routed("10.0.2.9", 8, eth_dst="08:00:00:00:00:18",
                                       eth_src=SWITCH_MAC), [4])
        tu.send_packet(self, 0, routed("10.7.0.1", 9, eth_dst=SWITCH_MAC, eth_src=HOST_MAC))
        tu.verify_packets(self, routed("10.7.0.1", 8, eth_dst="08:00:00:00:00:08",
                                       eth_src=SWITCH_MAC), [3])


class RelaysByHopId(RelayTest):
    """Relay frames leave unchanged by their hop id; unknown ids are dropped."""

    def runTest(self):
        self.add_hop(2, 5)
        tu.send_packet(self, 0, relay_frame(2))
        tu.verify_packets(self, relay_frame(2), [5])
        tu.send_packet(self, 0, relay_frame(3))
        tu.verify_no_other_packets(self)


class DefaultActionCanBeChanged(RelayTest):
    def runTest(self):
        self.sw.write(self.names.table_entry("RelayIngress.hops", "RelayIngress.to_port",
                                             {"port": 6}, default=True))
        tu.send_packet(self, 1, relay_frame(99))
        tu.verify_packets(self, relay_frame(99), [6])


class NeitherIpNorRelayLeavesOnPortZero(RelayTest):
    """No table touches egress_spec, which stays 0 (v1model, as in BMv2)."""

    def runTest(self):
        arp = Ether(dst="ff:ff:ff:ff:ff:ff", src=HOST_MAC) / ARP(psrc="10.0.1.1", pdst="10.0.1.2")
        tu.send_packet(self, 3, arp)
        tu.verify_packets(self, arp, [0])


class CountsPacketsPerIngressPort(RelayTest):
    def runTest(self):
        counter = self.names.counter("RelayIngress.rx_port").preamble.id
        before = self.sw.read_counter(counter, 4)
        for _ in range(3):
            tu.send_packet(self, 4, relay_frame(1))
        tu.verify_no_other_packets(self)
        packets, octets = self.sw.read_counter(counter, 4)
        assert packets - before[0] == 3, (before, packets)
        assert octets - before[1] == 3 * len(relay_frame(1)), (before, octets)
