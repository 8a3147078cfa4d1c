"""An in-process fabric for tests: every switch is a fabric.p4 pipeline
programmed from its plan through the executor's Python API, and links are
dictionary lookups. No root, no processes, no queueing."""

from __future__ import annotations

from pathlib import Path

from emulator.control.fabric_plan import SwitchPlan
from emulator.p4.exec.pipeline import CloneSession, V1ModelPipeline
from emulator.p4.frontend import compile_file
from emulator.topology import Topology

FABRIC = Path(__file__).resolve().parents[3] / "p4src" / "fabric.p4"


def program_pipeline(pipe: V1ModelPipeline, plan: SwitchPlan) -> None:
    for m in plan.members:
        routes = pipe.table("FabricIngress.routes")
        routes.profile.add_member(m.member_id, routes.make_member(m.action, [v for _, v in m.params]))
    for g in plan.groups:
        pipe.profiles[g.profile].set_group(g.group_id, list(g.members))
    for e in plan.entries:
        table = pipe.table(e.table)
        if e.default:
            table.set_default(table.make_entry(e.action, [v for _, v in e.params], hit=False))
            continue
        given = dict(e.match)
        match = []
        for key in table.keys:
            if key.name in given:
                match.append(given[key.name])
            else:
                match.append({"ternary": (0, 0), "lpm": (0, 0), "optional": None}[key.match_kind])
        canonical = table.canonical_key(match)
        if e.member is not None or e.group is not None:
            table.insert(table.make_indirect_entry(canonical, e.priority, member=e.member, group=e.group))
        else:
            table.insert(table.make_entry(e.action, [v for _, v in e.params], canonical, e.priority))
    for s in plan.clone_sessions:
        pipe.set_clone_session(s.session_id, CloneSession(list(s.replicas)))


class SimFabric:
    def __init__(self, topology: Topology, plans: dict[str, SwitchPlan]) -> None:
        self.topology = topology
        program = compile_file(FABRIC)
        self.switches = {}
        for name, plan in plans.items():
            pipe = V1ModelPipeline(program)
            program_pipeline(pipe, plan)
            self.switches[name] = pipe
        self.peer = {}
        for link in topology.links:
            self.peer[(link.node_a, link.port_a)] = (link.node_b, link.port_b)
            self.peer[(link.node_b, link.port_b)] = (link.node_a, link.port_a)

    def send(self, gpu_name: str, frame: bytes, max_hops: int = 8):
        """Inject ``frame`` from a GPU's NIC; returns (destination GPU or
        None, switches crossed, frame as delivered)."""
        gpu = self.topology.gpu(gpu_name)
        node, port = gpu.switch, gpu.switch_port
        crossed = []
        for _ in range(max_hops):
            crossed.append(node)
            out = self.switches[node].process(port, frame).outputs
            if len(out) != 1:
                return None, crossed, None
            frame = out[0].data
            node, port = self.peer[(node, out[0].port)]
            if node not in self.switches:
                return self._gpu_at(node, port), crossed, frame
        return None, crossed, None

    def _gpu_at(self, server: str, nic: int) -> str:
        for g in self.topology.gpus:
            if g.server == server and g.index == nic:
                return g.name
        return f"{server}:{nic}"
