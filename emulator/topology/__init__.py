"""Fabric descriptions: load, check, build, address, route and draw topologies.

Pure data, no root, and nothing else of the project is imported here. The
public API:

- :func:`load_topology`, :func:`topology_from_dict`, :func:`dump_topology`
  (:mod:`.loader`, checks in :mod:`.spec`, units in :mod:`.units`);
- :data:`GENERATORS` by kind (:mod:`.generators`), :func:`build_topology`;
- the model :class:`Topology`, :class:`Gpu`, :class:`Switch`, :class:`Port`,
  :class:`Link`, :class:`Server` and :func:`counts` (:mod:`.model`);
- the addressing plan (:mod:`.addressing`); front-end and storage
  fabrics (keys in :mod:`.side_spec`, wiring in :mod:`.networks`);
- :func:`scale_up_tier`, the scale-up switches and links of a topology with
  ``scale_up`` (:mod:`.scale_up`);
- :func:`routing_plan`, :func:`lookup`, :func:`paths`, :func:`routed_paths`
  (:mod:`.routing`);
- drawing lives in :mod:`.draw` (imported on demand: it pulls in matplotlib).
"""

from emulator.topology.build import build_topology
from emulator.topology.errors import TopologyError
from emulator.topology.generators import GENERATORS
from emulator.topology.loader import dump_topology, load_spec, load_topology, topology_from_dict
from emulator.topology.model import (
    NETWORKS,
    Gpu,
    Link,
    Port,
    ScaleUpDomain,
    ScaleUpNic,
    Server,
    Switch,
    Topology,
    counts,
)
from emulator.topology.routing import NextHop, Route, lookup, paths, routed_paths, routing_plan
from emulator.topology.scale_up import scale_up_tier
from emulator.topology.spec import KINDS, LinkSpec, ScaleUpSpec, TopologySpec, spec_from_dict

__all__ = [
    "GENERATORS",
    "KINDS",
    "NETWORKS",
    "Gpu",
    "Link",
    "LinkSpec",
    "NextHop",
    "Port",
    "Route",
    "ScaleUpDomain",
    "ScaleUpNic",
    "ScaleUpSpec",
    "Server",
    "Switch",
    "Topology",
    "TopologyError",
    "TopologySpec",
    "build_topology",
    "counts",
    "dump_topology",
    "load_spec",
    "load_topology",
    "lookup",
    "paths",
    "routed_paths",
    "routing_plan",
    "scale_up_tier",
    "spec_from_dict",
    "topology_from_dict",
]
