"""Idle timeouts (P4Runtime §9.1.7) on a table with ``support_timeout =
true``: an entry idle for its ``idle_timeout_ns`` is notified to the
primary, again after each further timeout while idle, and not while hit;
``time_since_last_hit`` reads the idle time. On the pipeline's clock, which
the test moves."""

from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emulator.p4.device import load_device_config, make_device_config
from emulator.p4.p4info.from_ir import p4info_for
from emulator.p4.p4info.index import P4InfoIndex
from tests.unit.data.p4runtime.harness import Switch, entity

PROGRAM = Path(__file__).parent / "p4" / "programs" / "basic_forwarding.p4"
MS_NS = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now_us = 0.0

    def __call__(self) -> float:
        return self.now_us

    def advance_ms(self, ms: float) -> None:
        self.now_us += ms * 1000.0


@pytest.fixture
def setup(tmp_path):
    source = PROGRAM.read_text()
    assert "size = 1024;" in source
    path = tmp_path / "aged.p4"
    path.write_text(source.replace("size = 1024;", "size = 1024;\n        support_timeout = true;", 1))
    device_config, program = make_device_config(path)
    info = p4info_for(program)
    clock = Clock()
    sw = Switch(device_id=0, loader=lambda _info, data: load_device_config(data, clock_us=clock))
    primary = sw.stream()
    assert primary.arbitrate(0, (0, 1)).status.code == 0
    sw.set_config(device_config=device_config, info=info)
    names = P4InfoIndex(info)
    yield sw, primary, clock, names
    sw.stop()


def route(names: P4InfoIndex, last_octet: int, timeout_ns: int) -> p4runtime_pb2.Update:
    table = next(t for t in names.tables.values() if t.name == "MyIngress.ipv4_lpm")
    forward = next(a for a in names.actions.values() if a.name == "MyIngress.ipv4_forward")
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = update.entity.table_entry
    te.table_id = table.id
    m = te.match.add(field_id=table.match_fields[0].id)
    m.lpm.value, m.lpm.prefix_len = bytes([10, 0, 2, last_octet]), 32
    te.action.action.action_id = forward.id
    te.action.action.params.add(param_id=forward.params[0].id, value=b"\x08\x00\x00\x00\x02\x22")
    te.action.action.params.add(param_id=forward.params[1].id, value=b"\x02")
    te.idle_timeout_ns = timeout_ns
    return update


def notified(stream, timeout: float = 1.0) -> list[bytes]:  # type: ignore[no-untyped-def]
    """The matched addresses of the next idle-timeout notification."""
    message = stream.get("idle_timeout_notification", timeout=timeout)
    if message is None:
        return []
    return [e.match[0].lpm.value for e in message.idle_timeout_notification.table_entry]


def test_an_idle_entry_is_notified_after_its_timeout_and_again_while_idle(setup):
    sw, primary, clock, names = setup
    sw.write(route(names, 2, 5 * MS_NS), route(names, 3, 0))  # .3 has no timeout
    clock.advance_ms(4)
    assert notified(primary, timeout=0.4) == []
    clock.advance_ms(2)
    assert notified(primary) == [bytes([10, 0, 2, 2])]
    assert notified(primary, timeout=0.4) == []          # once per timeout
    clock.advance_ms(5)
    assert notified(primary) == [bytes([10, 0, 2, 2])]   # still idle: again


def test_hits_keep_an_entry_alive(setup):
    sw, primary, clock, names = setup
    sw.write(route(names, 2, 5 * MS_NS))
    for _ in range(3):
        clock.advance_ms(4)
        sw.device.inject(1, bytes(Ether(dst="00:00:00:00:01:01") / IP(dst="10.0.2.2") / UDP()))
    assert notified(primary, timeout=0.4) == []
    clock.advance_ms(5)
    assert notified(primary) == [bytes([10, 0, 2, 2])]


def test_reads_show_the_timeout_and_the_idle_time(setup):
    sw, _primary, clock, names = setup
    sw.write(route(names, 2, 50 * MS_NS))
    clock.advance_ms(7)
    table_id = sw.read_text("table_entry {}")[0].table_entry.table_id
    plain = sw.read_text(f"table_entry {{ table_id: {table_id} }}")[0].table_entry
    assert plain.idle_timeout_ns == 50 * MS_NS and not plain.HasField("time_since_last_hit")
    aged = sw.read(entity(f"table_entry {{ table_id: {table_id} time_since_last_hit {{}} }}"))
    assert aged[0].table_entry.time_since_last_hit.elapsed_ns == 7 * MS_NS
