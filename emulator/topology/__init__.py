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
    Server,
    Switch,
    Topology,
    counts,
)
from emulator.topology.routing import NextHop, Route, lookup, paths, routed_paths, routing_plan
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
    "spec_from_dict",
    "topology_from_dict",
]
