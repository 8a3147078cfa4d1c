"""A whole fabric in one process on the virtual clock: switches, links, NIC
agents, programmed by the controller. What :class:`~emulator.run.session.FabricSession`
is for a live run, :class:`SimFabric` is for ``--target sim``.

- **Switches**: one :class:`~emulator.targets.builtin.switch.Switch` per
  topology switch (never started: no thread, the engine drives its data
  plane), with every port on a :class:`~.links.PortEnd` and its own
  :class:`~emulator.targets.p4runtime.server.P4RuntimeServicer`. Each
  switch's pipeline reads the simulated clock and draws its random numbers
  (ECN marking) from its own generator, seeded from the run's seed and the
  switch's name (:func:`switch_seed`), so no two switches share a stream and
  a run is repeatable.
- **Programming**: the controller computes the same plan as for a live
  fabric and writes it through the same P4Runtime path, over in-process
  clients (:mod:`.p4rt`); port rate, delay, buffer and PFC honouring go to
  the switches as the QueueControl service would set them.
- **Links**: one :class:`~.links.Link` per topology link. A GPU's NIC end
  (its backend NIC, or its scale-up port on a topology with the scale-up
  tier built, :func:`~emulator.topology.scale_up_tier`; both by interface
  in ``nics_by_intf``) belongs to its server's agent once one is attached; until then frames to
  it are counted and dropped (:class:`Sink`). A port's propagation delay
  is its link end's (:class:`~.links.PortEnd`), not the data plane's.
- **Order keys** (:mod:`.engine`): a switch's is its index in the topology,
  a host's agent's comes after every switch's, in the topology's host
  order (servers, then storage nodes and clients); the ends of link *i* (topology order) are 2*i* and 2*i* + 1; the
  queue samplers' calls are :data:`SAMPLER_CALL_KEY` + the switch's index.
  All follow from the topology, so they are the same however the fabric is
  split over engines.
- **Part of a fabric** (``local``, one MPI rank's share, :mod:`.parallel`):
  only the switches and servers named are built and programmed; a link
  with one end here and one elsewhere has both its ends here, the remote
  one only as what frames from the other rank land through, and the local
  one sends into that rank's :class:`Outbox` instead of this engine.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.control.client import SwitchClient
from emulator.control.compile import compile_fabric
from emulator.control.controller import FabricController, QueueSetter
from emulator.control.fabric_plan import CPU_PORT, FabricSettings, plan_fabric
from emulator.p4.device import program_from_device_config
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.sim.engine import INF, Component, Engine
from emulator.sim.links import AgentNode, Link, NicEnd, PortEnd, SwitchNode
from emulator.sim.p4rt import LocalStub
from emulator.targets.builtin.config import PortConfig, SwitchOptions, switch_seed
from emulator.targets.builtin.pcap import PcapWriter
from emulator.targets.builtin.switch import Switch
from emulator.targets.builtin.tm import QueueSeries
from emulator.targets.p4runtime.server import P4RuntimeServicer
from emulator.topology import Topology

if TYPE_CHECKING:
    from emulator.sim.parallel import Outbox

PRIORITY_QUEUES = 8
DEVICE_ID_BASE = 1  # as the live fabric: device id = 1 + switch index
SAMPLER_CALL_KEY = 1 << 20
SINK_KEY = 1 << 30


class Sink(Component):
    """Where frames to a GPU without an agent go: counted, dropped."""

    __slots__ = ("frames",)

    def __init__(self) -> None:
        super().__init__("sink", SINK_KEY)
        self.frames = 0

    def next_time(self) -> float:
        return INF

    def wake(self, now: float) -> None:
        pass

    def receive(self, frame: bytes, now: float) -> None:
        self.frames += 1


class SimFabric:
    """Switches, links and agents of a topology on one engine (see the module docstring)."""

    def __init__(self, topology: Topology, engine: Engine, *, settings: FabricSettings | None = None,
                 seed: int = 0, buffer_bytes: int | None = None, workdir: Path,
                 sample_interval_s: float = 0.010, local: set[str] | None = None,
                 outboxes: dict[str, "Outbox"] | None = None, executor: str | None = None) -> None:
        self.topology = topology
        # what runs the switches' P4 code (see V1ModelPipeline): "python",
        # "cython" or None (the environment's choice)
        self.executor = executor
        self.engine = engine
        self.settings = settings or FabricSettings()
        self.seed = seed
        self.buffer_bytes = buffer_bytes
        self.workdir = Path(workdir)
        self.sample_interval_s = sample_interval_s
        self.switches: dict[str, Switch] = {}
        self.nodes: dict[str, SwitchNode] = {}
        self.servicers: dict[str, P4RuntimeServicer] = {}
        self.links: dict[frozenset[str], Link] = {}
        self.nic_ends: dict[str, NicEnd] = {}     # GPU name -> its NIC's end
        self.scale_up_ends: dict[str, NicEnd] = {}  # GPU name -> its scale-up port's end
        # host interface -> (its NIC's end, the switch port end it is plugged into)
        self.nics_by_intf: dict[str, tuple[NicEnd, PortEnd]] = {}
        self.port_ends: dict[tuple[str, int], PortEnd] = {}
        self.agents: dict[str, AgentNode] = {}
        self.sink = Sink()
        self.controller: FabricController | None = None
        self._programs: dict[bytes, Any] = {}
        self._programs_lock = threading.Lock()
        # the classes generated for a program, shared by its switches' pipelines
        self._types_cache: dict = {}  # type: ignore[type-arg]
        # None: the whole fabric; else the switches and servers built here,
        # and for each name built elsewhere the outbox that reaches its rank
        self.local = local
        self.outboxes = outboxes or {}
        self.ends_by_key: dict[int, Any] = {}   # every end built here, by its key

    def p4_executor(self) -> dict[str, str]:
        """What runs this fabric's P4 code, for results.json's ``sim`` block:
        ``p4_executor`` (``cython`` where every switch here runs it
        compiled, else ``python``) and, where a switch asked for Cython and
        runs Python, ``p4_executor_note`` (why)."""
        pipes = [sw.dataplane.pipeline for sw in self.switches.values()
                 if sw.dataplane.pipeline is not None]
        notes = sorted({p.executor_note for p in pipes if p.executor_note})
        kind = "cython" if pipes and all(p.executor == "cython" for p in pipes) else "python"
        return {"p4_executor": kind, **({"p4_executor_note": notes[0]} if notes else {})}

    def is_local(self, name: str) -> bool:
        """Whether switch or server ``name`` runs on this engine."""
        return self.local is None or name in self.local

    @property
    def local_switches(self) -> list[Any]:
        return [sw for sw in self.topology.switches if self.is_local(sw.name)]

    # -- bring-up -----------------------------------------------------------------------
    def start(self) -> None:
        """Build every switch and link, then program the fabric."""
        compiled = compile_fabric("sim", self.workdir / "build")
        clock = self.engine.clock
        for sw in self.local_switches:
            options = SwitchOptions(device_id=DEVICE_ID_BASE + sw.index,
                                    priority_queues=PRIORITY_QUEUES, cpu_port=CPU_PORT)
            switch = Switch(options, clock=clock)
            switch.dataplane.series = QueueSeries(self.sample_interval_s)
            self.switches[sw.name] = switch
            self.nodes[sw.name] = SwitchNode(sw.name, switch, sw.index)
        for index, link in enumerate(self.topology.links):
            self._build_link(link, 2 * index)
        for sw in self.local_switches:
            self.servicers[sw.name] = P4RuntimeServicer(
                self.switches[sw.name], DEVICE_ID_BASE + sw.index, self._loader(sw.name),
                cpu_port=CPU_PORT)
        addresses = {name: f"sim:{name}" for name in self.switches}
        device_ids = {sw.name: DEVICE_ID_BASE + sw.index for sw in self.local_switches}

        def client(name: str, address: str, device_id: int) -> SwitchClient:
            return SwitchClient(name, address, device_id, stub=LocalStub(self.servicers[name]))

        self.controller = FabricController(self.topology, addresses, device_ids, compiled.p4info,
                                           compiled.device_config, self.settings,
                                           client_factory=client)
        self.controller.connect()
        self.controller.push_pipeline()
        plans = plan_fabric(self.topology, self.settings)
        self.controller.install({name: plan for name, plan in plans.items()
                                 if name in self.switches})
        self.controller.configure_queues(self._queue_setter(), self.buffer_bytes)
        for sw in self.local_switches:
            self.engine.every(self.sample_interval_s, self._sampler(self.nodes[sw.name]),
                              key=SAMPLER_CALL_KEY + sw.index)

    def _loader(self, name: str):  # type: ignore[no-untyped-def]
        seed = switch_seed(self.seed, name)
        clock = self.engine.clock

        def load(_p4info: object, config: bytes) -> V1ModelPipeline:
            # One compile per distinct device config; a pipeline per switch.
            with self._programs_lock:
                program = self._programs.get(config)
                if program is None:
                    program = self._programs[config] = program_from_device_config(config)
                return V1ModelPipeline(program, seed=seed, priority_queues=PRIORITY_QUEUES,
                                       clock_us=clock.us, name=name,
                                       types_cache=self._types_cache, executor=self.executor)
        return load

    def _build_link(self, link: Any, key: int) -> None:
        delay_s = link.delay_ns / 1e9
        if link.kind == "host":
            # a GPU's backend NIC, or its scale-up port (on a scale-up switch)
            gpu = self.topology.gpu(link.gpu)
            nic_of = gpu if link.network != "scale-up" else self.topology.scale_up_nic(gpu.name)
            switch, switch_port = nic_of.switch, nic_of.switch_port
            here_nic, here_sw = self.is_local(gpu.server), self.is_local(switch)
            if not (here_nic or here_sw):
                return
            port = self.topology.switch(switch).port(switch_port)
            wire = Link(f"{gpu.name}<->{switch}:{switch_port}", delay_s)
            nic = NicEnd(nic_of.intf, wire, self.engine, link.rate_bps, key=key)
            sw_end = PortEnd(port.intf, wire, self.engine, key + 1)
            self._wire(wire, nic, gpu.server, sw_end, switch)
            if here_sw:
                node = self.nodes[switch]
                self._add_port(switch, switch_port, sw_end)
                # frames from the NIC (on this rank or another) land in the switch
                nic.peer_node, nic.peer_receive = node, node.receiver(switch_port)
            # frames from the switch land in the sink until an agent attaches
            sw_end.peer_node, sw_end.peer_receive = self.sink, self.sink.receive
            if link.network == "scale-up":
                self.scale_up_ends[gpu.name] = nic
            else:
                self.nic_ends[gpu.name] = nic
            self.nics_by_intf[nic_of.intf] = (nic, sw_end)
            self.port_ends[(switch, switch_port)] = sw_end
            self.links[frozenset((gpu.name, switch))] = wire
            return
        a, b = link.node_a, link.node_b
        here_a, here_b = self.is_local(a), self.is_local(b)
        if not (here_a or here_b):
            return
        wire = Link(f"{a}:{link.port_a}<->{b}:{link.port_b}", delay_s)
        end_a = PortEnd(self.topology.switch(a).port(link.port_a).intf, wire, self.engine, key)
        end_b = PortEnd(self.topology.switch(b).port(link.port_b).intf, wire, self.engine,
                        key + 1)
        self._wire(wire, end_a, a, end_b, b)
        for end, name, port, other in ((end_a, a, link.port_a, end_b),
                                       (end_b, b, link.port_b, end_a)):
            if self.is_local(name):
                self._add_port(name, port, end)
                node = self.nodes[name]
                # what the far end sends lands here
                other.peer_node, other.peer_receive = node, node.receiver(port)
            self.port_ends[(name, port)] = end
        self.links[frozenset((a, b))] = wire

    def _wire(self, wire: Link, a: Any, owner_a: str, b: Any, owner_b: str) -> None:
        """Register both ends of ``wire``; an end owned here whose peer runs
        on another rank sends into that rank's outbox."""
        wire.ends = [a, b]
        for end, owner, peer in ((a, owner_a, owner_b), (b, owner_b, owner_a)):
            self.ends_by_key[end.key] = end
            if self.is_local(owner) and not self.is_local(peer):
                end.engine = self.outboxes[peer]

    def _add_port(self, switch: str, port: int, end: PortEnd) -> None:
        self.switches[switch].add_port(port, end, PortConfig(delay_on_link=True))

    def _queue_setter(self) -> QueueSetter:
        def set_port(switch: str, port: int, rate_bps: int, delay_us: float,
                     buffer_bytes: int | None) -> None:
            # the link end waits out the delay (see the module docstring)
            self.port_ends[(switch, port)].delay_s = delay_us * 1e-6
            settings: dict[str, object] = {"rate_bps": rate_bps, "delay_us": delay_us,
                                           "delay_on_link": True}
            if buffer_bytes is not None:
                settings["buffer_bytes"] = buffer_bytes
            self.switches[switch].set_port_config(port, **settings)

        def set_pfc(switch: str, port: int, priority: int, enabled: bool) -> None:
            self.switches[switch].set_pfc(port, priority, enabled)

        def set_port_settings(switch: str, port: int, settings: dict) -> None:
            if settings.get("delay_us") is not None:
                self.port_ends[(switch, port)].delay_s = settings["delay_us"] * 1e-6
            self.switches[switch].set_port_config(port, **settings)

        def set_buffer(switch: str, settings: dict) -> None:
            self.switches[switch].set_buffer(**settings)
        return QueueSetter(set_port, set_pfc, set_port_settings, set_buffer)

    def _sampler(self, node: SwitchNode):  # type: ignore[no-untyped-def]
        dp = node.dataplane

        def sample(now: float) -> None:
            dp.sample_queues(now)
        return sample

    # -- hosts ----------------------------------------------------------------------------
    def nic_backends(self, gpus: list[str]) -> dict[str, NicEnd]:
        """NIC name (the GPU's interface) -> its link end, for an agent's config."""
        return {self.topology.gpu(g).intf: self.nic_ends[g] for g in gpus}

    def attach_agent(self, server: str, agent: Any, gpus: list[str]) -> AgentNode:
        """Make ``agent`` (built on :meth:`nic_backends` of ``gpus``) receive
        what the switches send to those GPUs, and let the engine drive it."""
        node = AgentNode(server, agent, len(self.topology.switches) + self._server_index(server))
        names = [nic.config.name for nic in agent.nics]
        for name in gpus:
            gpu = self.topology.gpu(name)
            port_end = self.port_ends[(gpu.switch, gpu.switch_port)]
            port_end.peer_node = node
            port_end.peer_receive = node.receiver(names.index(gpu.intf))
        self.agents[server] = node
        self.engine.schedule(node)
        return node

    def backends(self, intfs: list[str]) -> dict[str, NicEnd]:
        """Host interface -> its link end, for an agent's config whose NICs
        are ``intfs`` (backend NICs and scale-up ports alike)."""
        return {intf: self.nics_by_intf[intf][0] for intf in intfs}

    def attach(self, server: str, agent: Any) -> AgentNode:
        """Make ``agent`` (built on :meth:`backends` of its NICs) receive what
        the switches send to its NICs, and let the engine drive it."""
        node = AgentNode(server, agent, len(self.topology.switches) + self._server_index(server))
        for index, nic in enumerate(agent.nics):
            port_end = self.nics_by_intf[nic.config.name][1]
            port_end.peer_node = node
            port_end.peer_receive = node.receiver(index)
        self.agents[server] = node
        self.engine.schedule(node)
        return node

    def _server_index(self, server: str) -> int:
        # storage nodes and clients come after the GPU servers (Topology.hosts)
        return next(i for i, s in enumerate(self.topology.hosts) if s.name == server)

    # -- events and captures ----------------------------------------------------------------
    def link(self, a: str, b: str) -> Link:
        found = self.links.get(frozenset((a, b)))
        if found is None:
            raise KeyError(f"no link between {a} and {b}")
        return found

    def capture_port(self, switch: str, port: int, path_in: Path, path_out: Path) -> None:
        """Record port ``port`` of ``switch``: frames received and sent."""
        ps = self.switches[switch].dataplane.port(port)
        clock = self.engine.clock
        ps.pcap_in = PcapWriter(path_in, clock_ns=clock.ns)
        ps.pcap_out = PcapWriter(path_out, clock_ns=clock.ns)

    def capture_gpu(self, gpu: str, path: Path) -> None:
        """Record what ``gpu``'s NIC sends and receives."""
        self.nic_ends[gpu].capture(path, self.engine.clock)

    # -- teardown ---------------------------------------------------------------------------
    def stop(self) -> None:
        if self.controller is not None:
            self.controller.close()
            self.controller = None
        for servicer in self.servicers.values():
            servicer.close()
        self.servicers.clear()
        for switch in self.switches.values():
            switch.close()
        for end in self.nic_ends.values():
            end.close()
        for end in self.scale_up_ends.values():
            end.close()
