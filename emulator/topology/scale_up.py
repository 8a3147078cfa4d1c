"""The scale-up tier: domains, their switches, the GPUs' scale-up ports.

A topology with a ``scale_up`` key has one scale-up domain per
``servers_per_domain`` consecutive servers (:func:`domains`, called by
:func:`~emulator.topology.build.build_topology`). :func:`scale_up_tier` turns
the domains into what the virtual-time fabric builds and programs:

- a switch ``su{d}`` (role ``scale-up``, tier 1) per domain, placed after
  every other switch (its index, hence its port MACs, follows them); port
  ``n`` faces the domain's ``n``-th GPU, in server then GPU order;
- a host link per GPU from its server's NIC ``gpus_per_server + r`` (the
  GPU's scale-up port, :class:`~emulator.topology.model.ScaleUpNic`) to that
  switch port, at the per-GPU scale-up rate, on network ``scale-up``. Each
  link has half the switch's hop latency (to the ns below), so a frame from
  one GPU to another pays the whole hop latency on the way, plus its
  serialisation at both ends (the sender's port and the switch's egress).

Addresses are :func:`~emulator.topology.addressing.scale_up_ip`. The graph
is left as it was: routes of the backend never cross a scale-up switch.
"""

from __future__ import annotations

from dataclasses import replace

from emulator.topology import addressing
from emulator.topology.model import (
    Link,
    Port,
    ScaleUpDomain,
    ScaleUpNic,
    Server,
    Switch,
    Topology,
)
from emulator.topology.spec import TopologySpec

ROLE = "scale-up"
NETWORK = "scale-up"


def domains(spec: TopologySpec, servers: tuple[Server, ...],
            first_switch_index: int) -> tuple[ScaleUpDomain, ...]:
    """Scale-up domains: consecutive servers, ``servers_per_domain`` each;
    domain ``d``'s switch gets index ``first_switch_index + d``."""
    scale_up = spec.scale_up
    if scale_up is None:
        return ()
    size = scale_up.servers_per_domain
    found = []
    for d, start in enumerate(range(0, len(servers), size)):
        members = servers[start:start + size]
        name = f"su{d}"
        index = first_switch_index + d
        nics = []
        for n, (server, r, gpu) in enumerate(
                ((server, r, gpu) for server in members for r, gpu in enumerate(server.gpus)),
                start=1):
            ip = addressing.scale_up_ip(d, n)
            nic_index = spec.gpus_per_server + len(server.nics) + r  # after front-end/storage NICs
            nics.append(ScaleUpNic(
                gpu=gpu, server=server.name, nic_index=nic_index,
                intf=addressing.host_intf(server.name, nic_index), ip=ip,
                mac=addressing.nic_mac(ip), switch=name, switch_port=n,
                gateway_mac=addressing.switch_port_mac(index, n)))
        found.append(ScaleUpDomain(
            name=name, index=d, servers=tuple(server.name for server in members),
            gpus=tuple(nic.gpu for nic in nics), rate_bps=scale_up.rate_bps,
            hop_latency_ns=scale_up.hop_latency_ns, nics=tuple(nics)))
    return tuple(found)


def _switch(domain: ScaleUpDomain, index: int, site: int | None) -> Switch:
    ports = tuple(
        Port(number=nic.switch_port, mac=nic.gateway_mac,
             intf=addressing.switch_intf(domain.name, index, nic.switch_port),
             peer=nic.gpu, peer_port=nic.nic_index, peer_mac=nic.mac, kind="host",
             facing="down")
        for nic in domain.nics)
    return Switch(name=domain.name, role=ROLE, tier=1, index=index, rail=None,
                  leaf_index=None, pod=None, site=site,
                  router_id=addressing.router_id(index), prefix=None, gateway_ip=None,
                  ports=ports)


def scale_up_tier(topology: Topology) -> Topology:
    """``topology`` with its scale-up switches and links added (see the
    module docstring); itself when it has no domains or has them already."""
    if not topology.domains or topology.has_scale_up_tier:
        return topology
    site_of = {server.name: server.site for server in topology.servers}
    first = len(topology.switches)
    switches = tuple(_switch(domain, first + domain.index, site_of[domain.servers[0]])
                     for domain in topology.domains)
    links = tuple(
        Link(node_a=nic.server, port_a=nic.nic_index, node_b=nic.switch,
             port_b=nic.switch_port, rate_bps=domain.rate_bps,
             delay_ns=domain.hop_latency_ns // 2, kind="host", gpu=nic.gpu, network=NETWORK)
        for domain in topology.domains for nic in domain.nics)
    # everything else (front-end and storage NICs, storage nodes, clients) kept as built
    return replace(topology, switches=topology.switches + switches,
                   links=topology.links + links)
