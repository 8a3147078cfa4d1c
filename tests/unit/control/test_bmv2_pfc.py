"""The BMv2 PFC approximation (emulator/control/bmv2_pfc.py) without BMv2:
the pause logic on a virtual clock, a fake ``simple_switch_CLI`` on PATH
that records its stdin, a fake digest stream, and the whole path through
the built-in switch's P4Runtime server (which, told to, hands PFC frames
to fabric.p4 as BMv2 does)."""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from pathlib import Path

import pytest
from p4.v1 import p4data_pb2, p4runtime_pb2
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.l2 import Ether

from emulator.control import bmv2_pfc
from emulator.control.bmv2_pfc import (
    PfcEmulationError, PfcEmulator, PfcPause, ThriftCli, decode_pause, link_rate_pps, pause_rate_pps, pause_seconds,
)
from emulator.control.client import P4RuntimeError, SwitchClient
from emulator.control.fabric_plan import PortQueueConfig
from emulator.p4.device import make_device_config
from emulator.p4.p4info.from_ir import p4info_for

FABRIC = Path(__file__).resolve().parents[3] / "p4src" / "fabric.p4"
MBPS100 = 100_000_000
LINK_PPS = round(MBPS100 / (8 * 1514))            # 8256 full-size frames/s
FULL_PAUSE_S = 0xFFFF * 512 / MBPS100             # 0.33554 s
PORTS = [PortQueueConfig(1, MBPS100, 5.0, (3,)), PortQueueConfig(2, MBPS100, 5.0, (3, 4)),
         PortQueueConfig(3, 0, 0.0, (3,))]


@pytest.fixture(scope="module")
def compiled():
    config, program = make_device_config(FABRIC)
    return config, p4info_for(program)


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordingCli:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.closed = False

        self.opened = False

    def open(self):
        self.opened = True

    def send(self, commands):
        self.batches.append(list(commands))

    def close(self):
        self.closed = True


class FakeClient:
    """A SwitchClient's digest side: a queue the test fills, writes recorded."""

    def __init__(self, fail_insert: bool = False) -> None:
        self.name = "leaf0"
        self.digests: queue.Queue = queue.Queue()
        self.writes: list[p4runtime_pb2.Update] = []
        self.fail_insert = fail_insert

    def write(self, updates):
        updates = list(updates)
        if self.fail_insert and updates[0].type == p4runtime_pb2.Update.INSERT:
            raise P4RuntimeError(self.name, "Write", "UNKNOWN", "",
                                 [(0, "ALREADY_EXISTS", "digest pfc_pause_t: already configured")])
        self.writes.extend(updates)
        return len(updates)


def emulator(p4info, clock=None, cli=None, client=None, **kw) -> PfcEmulator:
    return PfcEmulator(client or FakeClient(), p4info, 9090, PORTS, cli=cli or RecordingCli(),
                       clock=clock or VirtualClock(), **kw)


def pause(port=1, **times) -> PfcPause:
    t = [0] * 8
    enable = 0
    for key, quanta in times.items():
        prio = int(key[1:])
        t[prio] = quanta
        enable |= 1 << prio
    return PfcPause(port, enable, tuple(t))


def digest_list(did: int, *pauses: PfcPause, list_id: int = 1) -> p4runtime_pb2.DigestList:
    msg = p4runtime_pb2.DigestList(digest_id=did, list_id=list_id)
    for p in pauses:
        data = msg.data.add()
        for value, bits in [(p.port, 9), (p.class_enable, 8)] + [(t, 16) for t in p.times]:
            raw = value.to_bytes((bits + 7) // 8, "big").lstrip(b"\x00") or b"\x00"
            data.struct.members.add().bitstring = raw
    return msg


# ---- arithmetic -------------------------------------------------------------------------
def test_rates_and_pause_times():
    assert link_rate_pps(MBPS100) == LINK_PPS and link_rate_pps(0) == 0
    assert pause_seconds(0xFFFF, MBPS100) == pytest.approx(FULL_PAUSE_S)
    assert pause_seconds(1000, 0) == pytest.approx(1000 * 512 / 100e9)
    assert pause_rate_pps(FULL_PAUSE_S, LINK_PPS) == 3           # spacing ≈ the pause time
    assert pause_rate_pps(5.0, LINK_PPS) == 1                    # never 0 (BMv2: unlimited)
    assert pause_rate_pps(1e-6, LINK_PPS) == LINK_PPS            # never above the link
    assert pause_rate_pps(1e-6, 0) == 1_000_000
    assert pause_rate_pps(FULL_PAUSE_S, LINK_PPS, fixed_pps=1) == 1
    assert pause_rate_pps(FULL_PAUSE_S, LINK_PPS, fixed_pps=0) == 1


def test_link_rate_is_the_one_the_network_layer_sets():
    from emulator.network import bmv2
    from emulator.network.plan import PortPlan

    for rate_bps in (MBPS100, 1_000_000_000, 12_345):
        plan = PortPlan("leaf0", 4, "afx", "a", "02:00:00:00:00:01", "srv0/gpu0", 0, "host",
                        rate_bps, 5.0, 200_000)
        rate_cmd = [c for c in bmv2.queue_commands([plan]) if c.startswith("set_queue_rate")]
        assert rate_cmd == [f"set_queue_rate {link_rate_pps(rate_bps)} 4"]
        rate_cmd = [c for c in bmv2.queue_commands([plan], 1082) if "rate" in c]
        assert rate_cmd == [f"set_queue_rate {link_rate_pps(rate_bps, 1082)} 4"]


def test_a_pause_gives_back_the_link_rate_in_the_networks_frame_size(compiled):
    emu = emulator(compiled[1], frame_bytes=1082)
    assert emu.on_pause(pause(c3=0xFFFF), 0.0)[0].startswith("set_queue_rate 3 1 3")
    link_pps = round(MBPS100 / (8 * 1082))               # 11553 frames/s of 1082 B
    assert emu.expire(1.0) == [f"set_queue_rate {link_pps} 1 3"]
    assert emu.stats(1.0)["queues"]["1/3"]["link_pps"] == link_pps


def test_port_stats_give_paused_time_as_results_read_the_builtin_targets(compiled):
    from emulator.measure.results import switch_results

    emu = emulator(compiled[1])
    emu.on_pause(pause(port=2, c3=0xFFFF, c4=9766), 0.0)  # 4: 50 ms at 100 Mb/s
    emu.expire(1.0)
    stats = emu.port_stats(1.0)
    assert stats == {"ports": [{"port": 2, "queues": [
        {"priority": 3, "paused_s": pytest.approx(0xFFFF * 512 / MBPS100, abs=1e-6)},
        {"priority": 4, "paused_s": pytest.approx(0.05, abs=1e-4)}]}]}
    counted = switch_results({2: {3: {"pfc_rx_packets": 1}}}, stats)
    assert counted["2"]["3"]["paused_s"] == pytest.approx(0.3355, abs=1e-4)
    assert counted["2"]["3"]["pfc_rx"] == 1 and counted["2"]["4"]["paused_s"] > 0


def test_decode_pause_reads_minimal_bytestrings(compiled):
    _, p4info = compiled
    msg = digest_list(1, pause(port=258, c3=0xFFFF, c7=1))
    assert decode_pause(msg.data[0]) == PfcPause(258, 0x88, (0, 0, 0, 0xFFFF, 0, 0, 0, 1))
    with pytest.raises(ValueError):
        decode_pause(p4data_pb2.P4Data())


# ---- the pause logic on a virtual clock ---------------------------------------------
def test_pause_then_expiry_restores_the_link_rate(compiled):
    clock = VirtualClock()
    emu = emulator(compiled[1], clock)
    assert emu.on_pause(pause(c3=0xFFFF), 0.0) == ["set_queue_rate 3 1 3"]
    assert emu.next_deadline() == pytest.approx(FULL_PAUSE_S)
    assert emu.expire(0.3) == []
    assert emu.stats(0.3)["queues"]["1/3"]["paused"] is True
    assert emu.expire(0.34) == [f"set_queue_rate {LINK_PPS} 1 3"]
    assert emu.next_deadline() is None
    q = emu.stats(1.0)["queues"]["1/3"]
    assert (q["pauses"], q["refreshes"], q["resumes"], q["paused"]) == (1, 0, 1, False)
    assert q["paused_s"] == pytest.approx(FULL_PAUSE_S)   # to the timer's end, not to the check


def test_a_new_pause_restarts_the_timer(compiled):
    emu = emulator(compiled[1])
    emu.on_pause(pause(c3=0xFFFF), 0.0)
    assert emu.on_pause(pause(c3=0xFFFF), 0.2) == []      # same rate: no command
    assert emu.expire(0.34) == []
    assert emu.next_deadline() == pytest.approx(0.2 + FULL_PAUSE_S)
    assert emu.expire(0.54) == [f"set_queue_rate {LINK_PPS} 1 3"]
    q = emu.stats(1.0)["queues"]["1/3"]
    assert (q["pauses"], q["refreshes"]) == (1, 1)
    assert q["paused_s"] == pytest.approx(0.2 + FULL_PAUSE_S)


def test_a_shorter_refresh_changes_the_rate_and_shortens_the_timer(compiled):
    emu = emulator(compiled[1])
    emu.on_pause(pause(c3=0xFFFF), 0.0)
    quanta = 9766                                       # ~50 ms at 100 Mb/s
    assert emu.on_pause(pause(c3=quanta), 0.1) == ["set_queue_rate 20 1 3"]
    assert emu.next_deadline() == pytest.approx(0.1 + pause_seconds(quanta, MBPS100))


def test_zero_quanta_resume_at_once(compiled):
    emu = emulator(compiled[1])
    emu.on_pause(pause(c3=0xFFFF), 0.0)
    assert emu.on_pause(pause(c3=0), 0.1) == [f"set_queue_rate {LINK_PPS} 1 3"]
    assert emu.on_pause(pause(c3=0), 0.2) == []         # not paused: nothing to do
    assert emu.next_deadline() is None
    assert emu.stats(1.0)["queues"]["1/3"]["paused_s"] == pytest.approx(0.1)


def test_only_enabled_honoured_priorities_of_known_ports_pause(compiled):
    emu = emulator(compiled[1], priority_queues=4)
    # class 5 has a time but is not enabled: ignored without counting
    frame = PfcPause(2, (1 << 3) | (1 << 4) | (1 << 1), (0, 100, 0, 0xFFFF, 0xFFFF, 0xFFFF, 0, 0))
    cmds = emu.on_pause(frame, 0.0)
    assert cmds == ["set_queue_rate 3 2 3"]             # 4 >= priority_queues; 1 not honoured
    assert emu.on_pause(pause(port=9, c3=0xFFFF), 0.0) == []
    st = emu.stats(0.0)
    assert st["frames"] == 2 and st["ignored"] == 3
    assert list(st["queues"]) == ["2/3"]


def test_several_priorities_and_ports_in_one_step(compiled):
    emu = emulator(compiled[1])
    cmds = emu.on_pause(pause(port=2, c3=0xFFFF, c4=0xFFFF), 0.0)
    cmds += emu.on_pause(pause(c3=0xFFFF), 0.0)
    assert cmds == ["set_queue_rate 3 2 3", "set_queue_rate 3 2 4", "set_queue_rate 3 1 3"]
    assert emu.expire(1.0) == [f"set_queue_rate {LINK_PPS} 1 3", f"set_queue_rate {LINK_PPS} 2 3",
                               f"set_queue_rate {LINK_PPS} 2 4"]


def test_fixed_pause_rate_and_unlimited_links(compiled):
    emu = emulator(compiled[1], pause_rate_pps=1)
    assert emu.on_pause(pause(c3=0xFFFF), 0.0) == ["set_queue_rate 1 1 3"]
    # An unlimited port (rate 0): quanta timed at 100 Gb/s, restored to 0 (unlimited).
    assert emu.on_pause(pause(port=3, c3=0xFFFF), 0.0) == ["set_queue_rate 1 3 3"]
    assert emu.next_deadline() == pytest.approx(0xFFFF * 512 / 100e9)
    assert emu.expire(0.001) == ["set_queue_rate 0 3 3"]


# ---- digests in, one batch of commands out -----------------------------------------------
def test_enable_digest_writes_the_config(compiled):
    _, p4info = compiled
    client = FakeClient()
    emu = emulator(p4info, client=client)
    emu.enable_digest()
    (update,) = client.writes
    entry = update.entity.digest_entry
    assert update.type == p4runtime_pb2.Update.INSERT
    assert entry.digest_id == bmv2_pfc.digest_id(p4info) == emu.digest_id
    cfg = entry.config
    assert (cfg.max_list_size, cfg.max_timeout_ns, cfg.ack_timeout_ns) == (1, 0, 0)
    again = FakeClient(fail_insert=True)
    emulator(p4info, client=again).enable_digest()
    assert [u.type for u in again.writes] == [p4runtime_pb2.Update.MODIFY]


def test_step_batches_every_queued_digest(compiled):
    _, p4info = compiled
    clock, cli, client = VirtualClock(), RecordingCli(), FakeClient()
    emu = emulator(p4info, clock, cli, client)
    did = emu.digest_id
    client.digests.put(digest_list(did, pause(c3=0xFFFF), pause(port=2, c3=0xFFFF)))
    client.digests.put(digest_list(did + 1, pause(port=2, c4=0xFFFF)))   # not ours
    client.digests.put(digest_list(did, pause(port=2, c4=0xFFFF), list_id=2))
    assert emu.step() == ["set_queue_rate 3 1 3", "set_queue_rate 3 2 3", "set_queue_rate 3 2 4"]
    assert len(cli.batches) == 1
    clock.now = 0.2
    client.digests.put(digest_list(did, pause(c3=0)))
    assert emu.step() == [f"set_queue_rate {LINK_PPS} 1 3"]
    clock.now = 0.4
    assert emu.step() == [f"set_queue_rate {LINK_PPS} 2 3", f"set_queue_rate {LINK_PPS} 2 4"]
    assert emu.step() == [] and len(cli.batches) == 3
    assert emu.stats()["frames"] == 4


def test_stop_resumes_paused_queues_and_closes_the_cli(compiled):
    clock, cli = VirtualClock(), RecordingCli()
    emu = emulator(compiled[1], clock, cli)
    emu.on_pause(pause(c3=0xFFFF), 0.0)
    emu.stop()
    assert cli.batches == [[f"set_queue_rate {LINK_PPS} 1 3"]] and cli.closed


# ---- the fake simple_switch_CLI ---------------------------------------------------------
FAKE_CLI = """\
#!{python}
import json, os, sys, time
log = open(os.environ["FAKE_CLI_LOG"], "a")
log.write(json.dumps({{"argv": sys.argv[1:]}}) + "\\n"); log.flush()
if os.environ.get("FAKE_CLI_FAIL"):
    print("Could not connect to thrift client on port 9090", flush=True)
    sys.exit(1)
print("Obtaining JSON from switch...\\nDone", flush=True)
print("Control utility for runtime P4 table manipulation", flush=True)
for line in sys.stdin:
    line = line.strip()
    log.write(json.dumps({{"t": time.monotonic(), "cmd": line}}) + "\\n"); log.flush()
    if line == "die":
        sys.exit(3)
    if line.startswith("bad"):
        print("RuntimeCmd: Error: bad command", flush=True)
"""


@pytest.fixture
def fake_cli(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "simple_switch_CLI"
    script.write_text(FAKE_CLI.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "cli.log"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_CLI_LOG", str(log))

    def records():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]
    return records


def wait_for(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def commands(records):
    return [r["cmd"] for r in records if "cmd" in r]


def test_one_cli_process_takes_every_batch(fake_cli):
    cli = ThriftCli("leaf0", 9191)
    cli.send(["set_queue_rate 3 1 3", "set_queue_rate 3 2 3"])
    cli.send(["set_queue_rate 8256 1 3"])
    assert wait_for(lambda: len(commands(fake_cli())) == 3)
    cli.close()
    recs = fake_cli()
    assert [r["argv"] for r in recs if "argv" in r] == [["--thrift-port", "9191"]]
    assert commands(recs) == ["set_queue_rate 3 1 3", "set_queue_rate 3 2 3",
                              "set_queue_rate 8256 1 3"]
    assert cli.proc is None


def test_open_starts_the_cli_and_waits_until_it_has_connected(fake_cli):
    cli = ThriftCli("leaf0", 9191)
    cli.open()
    assert [r["argv"] for r in fake_cli()] == [["--thrift-port", "9191"]]
    assert cli.proc is not None and cli.proc.poll() is None
    cli.send(["set_queue_rate 3 1 3"])
    assert wait_for(lambda: commands(fake_cli()) == ["set_queue_rate 3 1 3"])
    cli.close()
    assert sum("argv" in r for r in fake_cli()) == 1


def test_a_cli_that_cannot_connect_is_one_line(fake_cli, monkeypatch):
    monkeypatch.setenv("FAKE_CLI_FAIL", "1")
    cli = ThriftCli("leaf0", 9191)
    with pytest.raises(PfcEmulationError) as err:
        cli.open(timeout_s=5)
    assert str(err.value).count("\n") == 0
    assert "leaf0: simple_switch_CLI --thrift-port 9191 did not connect" in str(err.value)
    assert "Could not connect to thrift client" in str(err.value)
    cli.close()


def test_the_cli_is_restarted_and_errors_are_kept(fake_cli):
    cli = ThriftCli("leaf0", 9191)
    cli.send(["die"])
    assert wait_for(lambda: cli.proc.poll() is not None)
    cli.send(["bad thing", "set_queue_rate 1 1 3"])
    assert wait_for(lambda: len(cli.errors) == 1)
    cli.close()
    assert cli.restarts == 1
    assert sum("argv" in r for r in fake_cli()) == 2
    assert commands(fake_cli()) == ["die", "bad thing", "set_queue_rate 1 1 3"]
    assert "Error" in cli.errors[0]


def test_emulator_thread_drives_the_fake_cli_in_real_time(compiled, fake_cli):
    _, p4info = compiled
    client = FakeClient()
    emu = PfcEmulator(client, p4info, 9292, PORTS).start()
    quanta = 9766                                        # 50 ms at 100 Mb/s
    try:
        # The CLI is up before the first pause, so the pause costs no CLI start.
        assert [r["argv"] for r in fake_cli()] == [["--thrift-port", "9292"]]
        start = time.monotonic()
        client.digests.put(digest_list(emu.digest_id, pause(c3=quanta)))
        assert wait_for(lambda: len(commands(fake_cli())) >= 2)
    finally:
        emu.stop()
    recs = [r for r in fake_cli() if "cmd" in r]
    assert [r["cmd"] for r in recs] == ["set_queue_rate 20 1 3", f"set_queue_rate {LINK_PPS} 1 3"]
    assert recs[0]["t"] - start < 0.5
    assert 0.045 <= recs[1]["t"] - start                  # never before the pause has run out
    assert recs[1]["t"] - recs[0]["t"] < 0.5
    q = emu.stats()["queues"]["1/3"]
    assert q["pauses"] == 1 and q["paused_s"] == pytest.approx(0.05, abs=0.01)


# ---- the whole path: fabric.p4 digest → P4Runtime stream → emulator → CLI ---------------
def test_pfc_frame_through_p4runtime_reaches_the_cli(compiled, fake_cli):
    from emulator.targets.builtin.cli import p4runtime_hook
    from emulator.targets.builtin.config import SwitchOptions
    from emulator.targets.builtin.ports import FakePort
    from emulator.targets.builtin.server import ControlServer
    from emulator.targets.builtin.switch import Switch

    config, p4info = compiled
    sw = Switch(SwitchOptions(pfc_to_pipeline=True))
    ports = {n: FakePort(f"p{n}", time.monotonic) for n in (1, 2)}
    for n, port in ports.items():
        sw.add_port(n, port)
    sw.start()
    server = ControlServer(sw, "127.0.0.1:0", [p4runtime_hook(None, 8)])
    server.start()
    client = SwitchClient("leaf0", f"127.0.0.1:{server.port}")
    emu = None
    try:
        client.connect()
        client.set_pipeline(p4info, config)
        emu = PfcEmulator(client, p4info, 9393, PORTS).start()
        frame = bytes(Ether(dst="01:80:c2:00:00:01", src="02:00:0a:00:00:02", type=0x8808)
                      / MACControlClassBasedFlowControl(c3_enabled=1, c3_pause_time=9766))
        ports[1].inject(frame)
        assert wait_for(lambda: len(commands(fake_cli())) >= 2)
        assert emu.stats()["frames"] == 1
    finally:
        if emu is not None:
            emu.stop()
        client.close()
        server.stop()
        sw.close()
    assert commands(fake_cli()) == ["set_queue_rate 20 1 3", f"set_queue_rate {LINK_PPS} 1 3"]
    assert [r["argv"] for r in fake_cli() if "argv" in r] == [["--thrift-port", "9393"]]
