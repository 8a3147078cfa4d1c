"""From a spec to a :class:`Topology`: ports, addresses, links and the graph.

The generator of the spec's kind says what plugs into what; this module
numbers every switch's ports (down-facing first: hosts in server then GPU
order, then lower-tier switches in their order; then up-facing ports), applies
the addressing plan and builds the networkx graph. It is the same for every
kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from emulator.topology import addressing, scale_up
from emulator.topology.generators import GENERATORS, Attachment, SwitchPlan, Wiring, with_sites
from emulator.topology.model import Gpu, Link, Port, Server, Switch, Topology
from emulator.topology.spec import TopologySpec
# front-end and storage fabrics: after the backend's switches, hosts and ports
from emulator.topology.networks import NicAttachment, SideWiring, side_wiring


@dataclass(frozen=True)
class _PortPlan:
    peer: str  # GPU name or switch name
    kind: str
    facing: str


def _gpu_name(server: int, gpu: int) -> str:
    return f"srv{server}/gpu{gpu}"


def _port_plans(wiring: Wiring, side: SideWiring) -> dict[str, list[_PortPlan]]:
    plans: dict[str, list[_PortPlan]] = {switch.name: []
                                         for switch in wiring.switches + side.switches}
    for attachment in sorted(wiring.attachments, key=lambda a: (a.server, a.gpu)):
        plans[attachment.switch].append(
            _PortPlan(_gpu_name(attachment.server, attachment.gpu), "host", "down"))
    for nic in side.attachments:
        plans[nic.switch].append(_PortPlan(nic.nic, "host", "down"))
    uplinks = list(wiring.fabric_links) + [(link.lower, link.upper) for link in side.links]
    for lower, upper in uplinks:
        plans[upper].append(_PortPlan(lower, "fabric", "down"))
    for lower, upper in uplinks:
        plans[lower].append(_PortPlan(upper, "fabric", "up"))
    # DCI ports come last on a border switch, in site order of the far end
    for a, z in wiring.dci_links:
        plans[a].append(_PortPlan(z, "fabric", "up"))
        plans[z].append(_PortPlan(a, "fabric", "up"))
    return plans


def _gpu(attachment: Attachment, leaf: SwitchPlan, leaf_port: int, leaf_index: int) -> Gpu:
    if leaf.rail is None or leaf.leaf_index is None:
        raise ValueError(f"switch {leaf.name} takes hosts but has no rail or leaf index")
    server = f"srv{attachment.server}"
    ip = addressing.nic_ip(leaf.rail, leaf.leaf_index, leaf_port)
    return Gpu(
        name=_gpu_name(attachment.server, attachment.gpu),
        server=server,
        server_index=attachment.server,
        index=attachment.gpu,
        rail=leaf.rail,
        nic=f"eth{attachment.gpu}",
        intf=addressing.host_intf(server, attachment.gpu),
        ip=ip,
        prefix_len=addressing.LEAF_PREFIX_LEN,
        mac=addressing.nic_mac(ip),
        gateway_ip=addressing.gateway_ip(leaf.rail, leaf.leaf_index),
        gateway_mac=addressing.switch_port_mac(leaf_index, leaf_port),
        switch=leaf.name,
        switch_port=leaf_port,
    )


def _nic(attachment: NicAttachment, leaf: SwitchPlan, leaf_port: int, leaf_index: int,
         server_index: int) -> Gpu:
    """A front-end or storage NIC (:mod:`.networks`), addressed as a GPU's NIC is."""
    if leaf.rail is None or leaf.leaf_index is None:
        raise ValueError(f"switch {leaf.name} takes hosts but has no plane or leaf index")
    ip = addressing.nic_ip(leaf.rail, leaf.leaf_index, leaf_port)
    return Gpu(
        name=attachment.nic, server=attachment.host, server_index=server_index,
        index=attachment.index, rail=leaf.rail, nic=f"eth{attachment.index}",
        intf=addressing.host_intf(attachment.host, attachment.index), ip=ip,
        prefix_len=addressing.LEAF_PREFIX_LEN, mac=addressing.nic_mac(ip),
        gateway_ip=addressing.gateway_ip(leaf.rail, leaf.leaf_index),
        gateway_mac=addressing.switch_port_mac(leaf_index, leaf_port),
        switch=leaf.name, switch_port=leaf_port, network=attachment.network)


def build_topology(spec: TopologySpec, wiring: Wiring | None = None) -> Topology:
    """Build the topology ``spec`` describes (wired by its kind's generator by default)."""
    wiring = wiring or with_sites(spec, GENERATORS[spec.kind](spec))
    side = side_wiring(spec, wiring)
    all_plans = wiring.switches + side.switches
    index_of = {plan.name: i for i, plan in enumerate(all_plans)}
    plan_of = {plan.name: plan for plan in all_plans}
    port_plans = _port_plans(wiring, side)
    # (switch, peer) -> port number; unique because two nodes share at most one link.
    port_of = {(name, plan.peer): n
               for name, plans in port_plans.items()
               for n, plan in enumerate(plans, start=1)}

    gpus = []
    for attachment in sorted(wiring.attachments, key=lambda a: (a.server, a.gpu)):
        leaf_port = port_of[(attachment.switch, _gpu_name(attachment.server, attachment.gpu))]
        gpus.append(_gpu(attachment, plan_of[attachment.switch], leaf_port,
                         index_of[attachment.switch]))
    host_index = {f"srv{s}": s for s in range(len(wiring.server_pods))}
    host_index.update({host.name: len(wiring.server_pods) + i
                       for i, host in enumerate(side.hosts)})
    nics = [_nic(att, plan_of[att.switch], port_of[(att.switch, att.nic)],
                 index_of[att.switch], host_index[att.host]) for att in side.attachments]
    gpu_of = {gpu.name: gpu for gpu in gpus + nics}

    switches = []
    for plan in all_plans:
        index = index_of[plan.name]
        ports = []
        for number, port_plan in enumerate(port_plans[plan.name], start=1):
            if port_plan.kind == "host":
                peer_gpu = gpu_of[port_plan.peer]
                peer_port, peer_mac = peer_gpu.index, peer_gpu.mac
            else:
                peer_port = port_of[(port_plan.peer, plan.name)]
                peer_mac = addressing.switch_port_mac(index_of[port_plan.peer], peer_port)
            ports.append(Port(
                number=number,
                mac=addressing.switch_port_mac(index, number),
                intf=addressing.switch_intf(plan.name, index, number),
                peer=port_plan.peer,
                peer_port=peer_port,
                peer_mac=peer_mac,
                kind=port_plan.kind,
                facing=port_plan.facing,
            ))
        owns_prefix = plan.rail is not None and plan.leaf_index is not None
        switches.append(Switch(
            name=plan.name,
            role=plan.role,
            tier=plan.tier,
            index=index,
            rail=plan.rail,
            leaf_index=plan.leaf_index,
            pod=plan.pod,
            site=plan.site,
            router_id=addressing.router_id(index),
            prefix=addressing.leaf_prefix(plan.rail, plan.leaf_index) if owns_prefix else None,
            gateway_ip=addressing.gateway_ip(plan.rail, plan.leaf_index) if owns_prefix else None,
            ports=tuple(ports),
            network=plan.network,
        ))

    servers = tuple(
        Server(name=f"srv{s}", index=s,
               gpus=tuple(_gpu_name(s, r) for r in range(spec.gpus_per_server)), pod=pod,
               site=wiring.server_sites[s] if wiring.server_sites else None,
               nics=side.server_nics.get(s, ()))
        for s, pod in enumerate(wiring.server_pods)
    )
    others = tuple(Server(name=host.name, index=host_index[host.name], gpus=(), site=host.site,
                          nics=host.nics, role=host.role) for host in side.hosts)
    links = [
        Link(node_a=gpu.server, port_a=gpu.index, node_b=gpu.switch, port_b=gpu.switch_port,
             rate_bps=spec.host_link.rate_bps, delay_ns=spec.host_link.delay_ns,
             kind="host", gpu=gpu.name)
        for gpu in gpus
    ]
    links += [
        Link(node_a=lower, port_a=port_of[(lower, upper)], node_b=upper,
             port_b=port_of[(upper, lower)], rate_bps=spec.fabric_link.rate_bps,
             delay_ns=spec.fabric_link.delay_ns, kind="fabric")
        for lower, upper in wiring.fabric_links
    ]
    if spec.sites is not None:
        dci = spec.sites.dci_link
        links += [
            Link(node_a=a, port_a=port_of[(a, z)], node_b=z, port_b=port_of[(z, a)],
                 rate_bps=dci.rate_bps, delay_ns=dci.delay_ns, kind="fabric", network="dci")
            for a, z in wiring.dci_links
        ]
    links += [
        Link(node_a=nic.server, port_a=nic.index, node_b=nic.switch, port_b=nic.switch_port,
             rate_bps=att.link.rate_bps, delay_ns=att.link.delay_ns, kind="host", gpu=nic.name,
             network=att.network)
        for nic, att in zip(nics, side.attachments)
    ]
    links += [
        Link(node_a=link.lower, port_a=port_of[(link.lower, link.upper)], node_b=link.upper,
             port_b=port_of[(link.upper, link.lower)], rate_bps=link.link.rate_bps,
             delay_ns=link.link.delay_ns, kind="fabric", network=link.network)
        for link in side.links
    ]
    return Topology(spec=spec, servers=servers, gpus=tuple(gpus), switches=tuple(switches),
                    links=tuple(links), graph=_graph(gpus + nics, switches, links),
                    domains=scale_up.domains(spec, servers, len(switches)),
                    nics=tuple(nics), others=others)


def _graph(gpus: list[Gpu], switches: list[Switch], links: list[Link]) -> nx.Graph:
    graph = nx.Graph()
    for gpu in gpus:
        graph.add_node(gpu.name, role="gpu" if gpu.network == "backend" else "nic",
                       server=gpu.server, rail=gpu.rail, ip=gpu.ip)
    for switch in switches:
        graph.add_node(switch.name, role=switch.role, tier=switch.tier, rail=switch.rail)
    for link in links:
        a = link.gpu if link.gpu is not None else link.node_a
        graph.add_edge(a, link.node_b, kind=link.kind, network=link.network,
                       rate_bps=link.rate_bps,
                       delay_ns=link.delay_ns, ports={a: link.port_a, link.node_b: link.port_b})
    return graph
