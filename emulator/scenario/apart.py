"""Which GPU pairs a traffic generator may make: :func:`apart_groups`.

Generators (``incast`` patterns, ``permutation``, ``all-to-all``) pair only
GPUs of different groups. Without a scale-up tier a group is a server: its
GPUs meet in zero time, so a flow between them is no traffic at all. With a
``scale_up`` key on the virtual clock (``target: sim``, which builds the
scale-up switches) every GPU is a group of its own: two GPUs of one domain
are paired like any others and their flow crosses the domain's switch.
Live runs do not build the tier, so they keep the servers as groups.
NICs that are not a GPU's (front-end, storage) always group by host.
"""

from __future__ import annotations

from emulator.topology import Topology


def apart_groups(topology: Topology, target: str) -> dict[str, str]:
    """NIC name -> its group (module docstring): a server's name, or the GPU's own."""
    own = bool(topology.domains) and target == "sim"
    groups = {gpu.name: gpu.name if own else gpu.server for gpu in topology.gpus}
    groups.update((nic.name, nic.server) for nic in topology.nics)
    return groups
