"""Programs a whole fabric: one P4Runtime client per switch (primary
controller), the pipeline pushed to all, each switch's plan written, queue
settings applied, and counters read back per port and priority."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable

from p4.config.v1 import p4info_pb2

from emulator.control.client import SwitchClient
from emulator.control.encode import Encoder
from emulator.control.fabric_plan import FabricSettings, SwitchPlan, plan_fabric
from emulator.p4.p4info.index import P4InfoIndex
from emulator.topology import Topology

# fabric.p4 counters, indexed port * 8 + priority (p4src/include/*.p4).
COUNTERS = {
    "rx": "FabricIngress.rx_counter",
    "drop": "FabricIngress.drop_counter",
    "pfc_rx": "FabricIngress.pfc_rx_counter",
    "tx": "FabricEgress.tx_counter",
    "ecn": "FabricEgress.ecn_counter",
    "pfc_tx": "FabricEgress.pfc_tx_counter",
}
PRIORITIES = 8


@dataclass
class QueueSetter:
    """How the controller reaches a switch's queues outside P4Runtime:
    ``set_port(switch, port, rate_bps, delay_us, buffer_bytes)``,
    ``set_pfc(switch, port, priority, enabled)``, and on targets with a
    buffer of their own ``set_port_settings(switch, port, settings)`` (the
    port's lossless settings) and ``set_buffer(switch, settings)`` (pool
    and alphas)."""

    set_port: Callable[[str, int, int, float, int | None], None]
    set_pfc: Callable[[str, int, int, bool], None]
    set_port_settings: Callable[[str, int, dict], None] | None = None
    set_buffer: Callable[[str, dict], None] | None = None


class FabricController:
    def __init__(self, topology: Topology, addresses: dict[str, str], device_ids: dict[str, int],
                 p4info: p4info_pb2.P4Info, device_config: bytes,
                 settings: FabricSettings | None = None, *,
                 client_factory: Callable[[str, str, int], SwitchClient] = SwitchClient) -> None:
        self.topology = topology
        self.p4info = p4info
        self.device_config = device_config
        self.settings = settings or FabricSettings()
        self.encoder = Encoder(P4InfoIndex(p4info))
        # ``client_factory(name, address, device_id)``: how a switch is reached
        # (gRPC by default; the virtual-time target passes in-process clients).
        self.clients = {name: client_factory(name, addresses[name], device_ids[name])
                        for name in addresses}
        self.plans: dict[str, SwitchPlan] = {}

    def _each(self, fn: Callable[[SwitchClient], object]) -> dict[str, object]:
        with ThreadPoolExecutor(max_workers=min(8, max(len(self.clients), 1))) as pool:
            futures = {name: pool.submit(fn, c) for name, c in self.clients.items()}
            return {name: f.result() for name, f in futures.items()}

    def connect(self) -> None:
        self._each(lambda c: c.connect())

    def push_pipeline(self) -> None:
        self._each(lambda c: c.set_pipeline(self.p4info, self.device_config))

    def install(self, plans: dict[str, SwitchPlan] | None = None) -> dict[str, int]:
        """Write every switch's plan; returns entries written per switch."""
        self.plans = plans if plans is not None else plan_fabric(self.topology, self.settings)

        def write(client: SwitchClient) -> int:
            return client.write(self.encoder.plan_updates(self.plans[client.name]))
        return self._each(write)  # type: ignore[return-value]

    def configure_queues(self, setter: QueueSetter, buffer_bytes: int | None = None) -> None:
        """Port rates/delays/buffers and which priorities honour PFC."""
        buffer = self.settings.buffer
        for name, plan in self.plans.items():
            for port in plan.ports:
                setter.set_port(name, port.port, port.rate_bps, port.delay_us, buffer_bytes)
                for prio in range(PRIORITIES):
                    setter.set_pfc(name, port.port, prio, prio in port.pfc_priorities)
                if port.lossless and setter.set_port_settings is not None:
                    setter.set_port_settings(name, port.port, dict(port.lossless))
            # After the ports: the pool must hold the headrooms they reserve.
            if setter.set_buffer is not None and not self.settings.pfc_in_p4:
                setter.set_buffer(name, {"pool_bytes": buffer.pool_bytes,
                                         "alpha": list(buffer.alpha)})

    def bring_up(self, setter: QueueSetter | None = None, buffer_bytes: int | None = None) -> None:
        self.connect()
        self.push_pipeline()
        self.install()
        if setter is not None:
            self.configure_queues(setter, buffer_bytes)

    def read_counters(self, switch: str, ports: Iterable[int] | None = None
                      ) -> dict[int, dict[int, dict[str, int]]]:
        """port → priority → counters (rx/tx packets and bytes, drops, ECN
        marks, PFC frames sent and received), only non-zero slots. With
        ``ports``, only their cells are read, in one request (a whole counter
        is thousands of cells, slow to encode in pure-Python protobuf)."""
        client = self.clients[switch]
        key_of = {self.encoder.counter_read(name).counter_entry.counter_id: key
                  for key, name in COUNTERS.items()}
        if ports is None:
            entities = client.read([self.encoder.counter_read(name)
                                    for name in COUNTERS.values()])
        else:
            wanted = []
            for name in COUNTERS.values():
                for port in ports:
                    for prio in range(PRIORITIES):
                        entity = self.encoder.counter_read(name)
                        entity.counter_entry.index.index = port * PRIORITIES + prio
                        wanted.append(entity)
            entities = client.read(wanted)
        out: dict[int, dict[int, dict[str, int]]] = {}
        for entity in entities:
            ce = entity.counter_entry
            if not (ce.data.packet_count or ce.data.byte_count):
                continue
            key = key_of[ce.counter_id]
            port, prio = divmod(ce.index.index, PRIORITIES)
            slot = out.setdefault(port, {}).setdefault(prio, {})
            slot[f"{key}_packets"] = ce.data.packet_count
            if ce.data.byte_count:
                slot[f"{key}_bytes"] = ce.data.byte_count
        return out

    def close(self) -> None:
        for c in self.clients.values():
            c.close()

    def __enter__(self) -> "FabricController":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
