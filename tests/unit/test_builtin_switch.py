"""The built-in switch with its data-plane thread, on fake ports: the
control plane's way in, program swap under traffic, CPU port, captures and
the QueueControl gRPC service (in-process server on port 0)."""

from __future__ import annotations

import threading
import time

import pytest
from scapy.utils import rdpcap

from emulator.targets.builtin.config import SwitchOptions
from emulator.targets.builtin.errors import SwitchError, UnknownPortError
from emulator.targets.builtin.pcap import read_pcap
from emulator.targets.builtin.ports import FakePort
from emulator.targets.builtin.queue_control import (
    QueueControlClient, QueueControlError, add_queue_control,
)
from emulator.targets.builtin.server import ControlServer
from emulator.targets.builtin.switch import Switch
from tests.unit.test_builtin_support import (
    ScriptedPipeline, basic_pipeline, check_sums, ip_ident, ipv4_frame,
)


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


@pytest.fixture
def switch():
    sw = Switch(SwitchOptions(cpu_port=64))
    ports = {n: FakePort(f"p{n}", time.monotonic) for n in (1, 2, 3)}
    for n, port in ports.items():
        sw.add_port(n, port)
    sw.set_pipeline(basic_pipeline())
    sw.start()
    yield sw, ports
    sw.close()


def test_forwards_through_the_event_loop(switch):
    sw, ports = switch
    for i in range(50):
        ports[1].inject(ipv4_frame(2, 200, ident=i))
    assert wait_for(lambda: len(ports[2].sent) == 50)
    assert [ip_ident(f) for _, f in ports[2].sent] == list(range(50))
    frame = ports[2].sent[0][1]
    assert frame[:6] == bytes.fromhex("020000000202") and frame[22] == 63  # dst MAC, TTL
    stats = sw.port_stats([1, 2])
    assert stats["ports"][0]["rx_packets"] == 50 and stats["ports"][1]["tx_packets"] == 50
    check_sums(stats)


def test_call_in_dataplane_runs_on_the_loop_thread_and_returns_or_raises(switch):
    sw, _ = switch
    assert sw.call_in_dataplane(threading.current_thread).name == "aifabric-dataplane"
    assert sw.call_in_dataplane(lambda: 42) == 42
    with pytest.raises(ZeroDivisionError):
        sw.call_in_dataplane(lambda: 1 / 0)
    with pytest.raises(UnknownPortError):
        sw.set_port_config(9, rate_bps=1e6)


def test_timers_fire_on_the_loop(switch):
    sw, ports = switch
    sw.set_port_config(2, rate_bps=8e6, delay_us=20_000)
    start = time.monotonic()
    for i in range(5):
        ports[1].inject(ipv4_frame(2, 1000, ident=i))
    assert wait_for(lambda: len(ports[2].sent) == 5)
    times = [t - start for t, _ in ports[2].sent]
    # never early: frame i leaves after (i + 1) ms on the wire plus 20 ms of delay
    assert all(t >= 0.020 + 0.001 * (i + 1) for i, t in enumerate(times))
    assert times[-1] < 2.0


def test_program_swap_under_traffic_loses_nothing(switch):
    sw, ports = switch
    old = ScriptedPipeline(route=lambda p, d, t: [(2, 0)], tag=b"A")
    new = ScriptedPipeline(route=lambda p, d, t: [(2, 0)], tag=b"B")
    sw.set_pipeline(old)
    stop = threading.Event()
    sent = [0]

    def blast():
        while not stop.is_set() and sent[0] < 3000:
            ports[1].inject(ipv4_frame(2, 100, ident=sent[0]))
            sent[0] += 1
            if sent[0] % 50 == 0:
                time.sleep(0.001)

    thread = threading.Thread(target=blast)
    thread.start()
    for i in range(20):
        sw.set_pipeline(new if i % 2 == 0 else old)
        time.sleep(0.005)
    stop.set()
    thread.join()
    assert wait_for(lambda: len(ports[2].sent) == sent[0])
    tags = [f[-1:] for _, f in ports[2].sent]
    assert set(tags) == {b"A", b"B"}
    stats = sw.port_stats()
    check_sums(stats)
    assert sum(sum(p["drops"].values()) for p in stats["ports"]) == 0


def test_queued_packets_finish_with_the_program_that_took_them(switch):
    sw, ports = switch
    sw.set_port_config(2, rate_bps=1e6)
    sw.set_pipeline(ScriptedPipeline(route=lambda p, d, t: [(2, 0)], tag=b"A"))
    for i in range(4):
        ports[1].inject(ipv4_frame(2, 500, ident=i))
    assert wait_for(lambda: sw.port_stats([1])["ports"][0]["rx_packets"] == 4)
    sw.set_pipeline(ScriptedPipeline(route=lambda p, d, t: [(2, 0)], tag=b"B"))
    ports[1].inject(ipv4_frame(2, 500, ident=9))
    assert wait_for(lambda: len(ports[2].sent) == 5)
    assert [f[-1:] for _, f in ports[2].sent] == [b"A"] * 4 + [b"B"]


def test_cpu_port_packet_in_and_out(switch):
    sw, ports = switch
    got = []
    sw.set_packet_in_handler(got.append)
    sw.set_pipeline(ScriptedPipeline(route=lambda p, d, t: [(64, 0)] if p == 1 else [(3, 0)]))
    ports[1].inject(b"\x01" * 60)
    assert wait_for(lambda: got == [b"\x01" * 60])
    sw.inject_packet_out(b"\x02" * 60)
    assert wait_for(lambda: len(ports[3].sent) == 1)
    assert ports[3].sent[0][1] == b"\x02" * 60


def test_digests_reach_the_handler(switch):
    sw, ports = switch
    got = []
    sw.set_digest_handler(lambda name, value: got.append((name, value)))
    sw.set_pipeline(ScriptedPipeline(route=lambda p, d, t: [], digest=("mac_learn", (1, 2))))
    ports[1].inject(bytes(60))
    assert wait_for(lambda: got == [("mac_learn", (1, 2))])
    assert sw.port_stats()["digests"] == 1


def test_hooks_add_services_and_get_closed():
    closed = []

    class Servicer:
        def close(self):
            closed.append(True)

    sw = Switch()
    server = ControlServer(sw, "127.0.0.1:0", [lambda server, switch: Servicer(),
                                               add_queue_control])
    server.start()
    server.stop()
    sw.close()
    assert closed == [True]


def test_no_cpu_port_means_no_packet_out():
    sw = Switch(SwitchOptions())
    with pytest.raises(SwitchError, match="no CPU port"):
        sw.inject_packet_out(b"x")
    sw.close()


def test_pcap_per_port_and_direction(tmp_path):
    sw = Switch(SwitchOptions(pcap_dir=str(tmp_path)))
    ports = {n: FakePort(f"p{n}") for n in (1, 2)}
    for n, port in ports.items():
        sw.add_port(n, port)
    sw.set_pipeline(basic_pipeline())
    sw.start()
    for i in range(3):
        ports[1].inject(ipv4_frame(2, 120, ident=i))
    assert wait_for(lambda: len(ports[2].sent) == 3)
    sw.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "p1_in.pcap", "p1_out.pcap", "p2_in.pcap", "p2_out.pcap"]
    records = read_pcap(tmp_path / "p2_out.pcap")
    assert [f for _, f in records] == [f for _, f in ports[2].sent]
    assert abs(records[0][0] / 1e9 - time.time()) < 60
    packets = rdpcap(str(tmp_path / "p1_in.pcap"))
    assert [bytes(p) for p in packets] == [ipv4_frame(2, 120, ident=i) for i in range(3)]
    assert rdpcap(str(tmp_path / "p1_out.pcap")) is not None


def test_stop_is_clean_and_close_closes_ports():
    sw = Switch()
    port = FakePort("p1")
    sw.add_port(1, port)
    sw.start()
    thread = sw._thread
    sw.close()
    assert not thread.is_alive() and port.closed and not sw.running
    assert sw.call_in_dataplane(lambda: 7) == 7


@pytest.fixture
def control(switch):
    sw, ports = switch
    server = ControlServer(sw, "127.0.0.1:0", [add_queue_control])
    server.start()
    client = QueueControlClient(f"127.0.0.1:{server.port}")
    client.wait_ready()
    yield sw, ports, client
    client.close()
    server.stop()


def test_queue_control_sets_port_config_and_pfc(control):
    sw, ports, client = control
    config = client.set_port_config(2, rate_bps=1e6, delay_us=10, buffer_bytes=3000)
    assert config["rate_bps"] == 1e6 and config["buffer_bytes"] == 3000
    assert sw.port_config(2).delay_us == 10
    assert client.set_pfc(2, 3, False)["pfc_priorities"] == [0, 1, 2, 4, 5, 6, 7]
    assert client.set_pfc(2, 3, True)["pfc_priorities"] == list(range(8))
    rows = client.get_port_config([2, 3])
    assert [r["port"] for r in rows] == [2, 3] and rows[1]["config"]["rate_bps"] == 0
    assert [r["port"] for r in client.get_port_config()] == [1, 2, 3, 64]


def test_queue_control_sets_the_buffer_and_lossless_ports(control):
    sw, ports, client = control
    config = client.set_port_config(2, lossless_priorities=[3], xoff_bytes=20_000,
                                    xon_bytes=10_000, headroom_bytes=50_000)
    assert config["lossless_priorities"] == [3] and config["headroom_bytes"] == 50_000
    state = client.set_buffer(pool_bytes=1_000_000, alpha={"0": 0.125})
    assert state["pool_bytes"] == 1_000_000 and state["headroom_bytes"] == 50_000
    assert state["shared_bytes"] == 950_000 and state["alpha"][0] == 0.125
    assert client.get_buffer()["shared_bytes"] == 950_000
    with pytest.raises(QueueControlError, match="does not exceed the headroom"):
        client.set_buffer(pool_bytes=40_000)
    q = client.get_port_stats([2])["ports"][0]["queues"][3]
    assert q["lossless"] and q["headroom_bytes"] == 50_000 and q["pg_bytes"] == 0


def test_queue_control_stats_and_reset(control):
    sw, ports, client = control
    client.set_port_config(2, rate_bps=1e6, buffer_bytes=3000)
    for i in range(8):
        ports[1].inject(ipv4_frame(2, 1000, ident=i))
    assert wait_for(lambda: client.get_port_stats([1])["ports"][0]["rx_packets"] == 8)
    stats = client.get_port_stats([2])
    q = stats["ports"][0]["queues"][0]
    assert q["tail_dropped"] == 4 and q["max_depth_bytes"] == 3000
    assert stats["ports"][0]["drops"]["tail"] == 4
    check_sums(stats)
    client.reset_stats([2])
    stats = client.get_port_stats([2])
    assert stats["ports"][0]["queues"][0]["tail_dropped"] == 0
    check_sums(stats)


def test_queue_control_errors(control):
    _, _, client = control
    with pytest.raises(QueueControlError, match="no port 9") as info:
        client.set_port_config(9, rate_bps=1)
    assert info.value.code.name == "NOT_FOUND"
    with pytest.raises(QueueControlError, match="rate_bps") as info:
        client.set_port_config(2, rate_bps=-5)
    assert info.value.code.name == "INVALID_ARGUMENT"
    with pytest.raises(QueueControlError, match="unknown port setting"):
        client.set_port_config(2, speed=5)
    with pytest.raises(QueueControlError, match="not in 0..7"):
        client.set_pfc(2, 9, True)
    with pytest.raises(QueueControlError, match="ports must be a list"):
        client._call("GetPortStats", {"ports": "all"})
