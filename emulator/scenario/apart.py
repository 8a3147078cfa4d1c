"""Which GPU pairs a traffic generator may make: :func:`apart_groups`.

Generators (``incast`` patterns, ``permutation``, ``all-to-all``) pair only
GPUs of different groups, and a job's collectives and transfers send no
message between ranks of one group. Without a scale-up tier a group is a
server: its GPUs meet in zero time, so a flow between them is no traffic
at all. With a ``scale_up`` key every GPU is a group of its own, so two
GPUs of one domain are paired like any others and their flow crosses the
domain's switch:

- on the virtual clock (``target: sim``), which builds the scale-up
  switches, always;
- live (``builtin``, ``bmv2``) when every domain is one server: the
  server's scale-up switch is timed inside its NIC agent
  (:mod:`emulator.traffic.agent.scale_up`). Domains of several servers
  cannot be timed in one agent; live keeps the servers as groups there
  (and refuses, in one line, a flow that would cross such a domain).

NICs that are not a GPU's (front-end, storage) always group by host.
"""

from __future__ import annotations

from emulator.topology import Topology


def scale_up_paired(topology: Topology, target: str) -> bool:
    """Whether GPUs of one domain are paired over its scale-up switch (module docstring)."""
    if not topology.domains:
        return False
    return target == "sim" or all(len(d.servers) == 1 for d in topology.domains)


def apart_groups(topology: Topology, target: str) -> dict[str, str]:
    """NIC name -> its group (module docstring): a server's name, or the GPU's own."""
    own = scale_up_paired(topology, target)
    groups = {gpu.name: gpu.name if own else gpu.server for gpu in topology.gpus}
    groups.update((nic.name, nic.server) for nic in topology.nics)
    return groups
