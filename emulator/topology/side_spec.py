"""The ``front_end`` and ``storage`` keys of a topology file: what they may
say (JSON Schemas :mod:`.spec` folds into its own) and the checked
parameters they become.

- ``front_end``: ``link`` (rate, delay of every front-end NIC's link);
  optional ``nics_per_server`` (default 1), ``clients`` (hosts sending
  requests and receiving tokens, default 1), ``nics_per_leaf`` (host ports
  of a front-end leaf, default 32), ``spines`` (default 2) and
  ``fabric_link`` (leaf to spine, default ``link``).
- ``storage``: ``nodes`` and ``link``; optional ``nics_per_node`` (default
  1), ``network`` (``separate``, the default: a storage fabric of its own,
  each GPU server with ``server_nics`` storage NICs, default 1;
  ``front-end``: storage nodes on the front-end fabric, servers reach them
  through their front-end NICs; ``backend``: storage leaves linked to the
  backend's top tier, GPUs reach storage through their backend NICs),
  ``nics_per_leaf`` (default 32) and, for a separate fabric, ``spines``
  (default 2) and ``fabric_link``.

Counts are per site where there are sites. :mod:`.networks` wires them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from emulator.topology.errors import TopologyError

if TYPE_CHECKING:
    from emulator.topology.spec import LinkSpec

STORAGE_NETWORKS: tuple[str, ...] = ("separate", "front-end", "backend")
DEFAULT_NICS_PER_LEAF = 32
DEFAULT_SIDE_SPINES = 2
MAX_SIDE_NICS = 16  # front-end or storage NICs of one host
# A side leaf's host ports plus its uplinks fit the addressing plan's 254.
MAX_SIDE_LEAF_PORTS = 254
MAX_SIDE_LEAVES = 256  # per network, all sites together (the third octet)

_LINK: dict[str, Any] = {
    "type": "object",
    "description": "a mapping with rate and delay, e.g. {rate: 100Gbps, delay: 1us}",
    "properties": {
        "rate": {"type": ["string", "integer"],
                 "description": "use a number with bps, Kbps, Mbps or Gbps (e.g. 100Mbps)"},
        "delay": {"type": ["string", "integer"],
                  "description": "use a number with ns, us, ms or s (e.g. 5us)"},
    },
    "required": ["rate", "delay"],
    "additionalProperties": False,
}


def _count(minimum: int, maximum: int | None = None, default: int | None = None
           ) -> dict[str, Any]:
    words = (f"a whole number from {minimum} to {maximum}" if maximum is not None
             else f"a whole number >= {minimum}")
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum,
                              "description": words + (f" (default {default})"
                                                      if default is not None else "")}
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


FRONT_END_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": ("a mapping with link and optional nics_per_server, clients, nics_per_leaf, "
                    "spines, fabric_link, e.g. {nics_per_server: 1, link: {rate: 100Gbps, "
                    "delay: 1us}}"),
    "properties": {
        "nics_per_server": _count(1, MAX_SIDE_NICS, 1),
        "link": _LINK,
        "fabric_link": _LINK,
        "clients": _count(0, None, 1),
        "nics_per_leaf": _count(1, MAX_SIDE_LEAF_PORTS - 1, DEFAULT_NICS_PER_LEAF),
        "spines": _count(1, None, DEFAULT_SIDE_SPINES),
    },
    "required": ["link"],
    "additionalProperties": False,
}
STORAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": ("a mapping with nodes, link and optional nics_per_node, network, "
                    "server_nics, nics_per_leaf, spines, fabric_link, e.g. {nodes: 4, "
                    "nics_per_node: 2, link: {rate: 200Gbps, delay: 1us}}"),
    "properties": {
        "nodes": _count(1),
        "nics_per_node": _count(1, MAX_SIDE_NICS, 1),
        "link": _LINK,
        "network": {"enum": list(STORAGE_NETWORKS),
                    "description": "one of " + ", ".join(STORAGE_NETWORKS)
                    + " (default separate)"},
        "server_nics": _count(1, MAX_SIDE_NICS, 1),
        "fabric_link": _LINK,
        "nics_per_leaf": _count(1, MAX_SIDE_LEAF_PORTS - 1, DEFAULT_NICS_PER_LEAF),
        "spines": _count(1, None, DEFAULT_SIDE_SPINES),
    },
    "required": ["nodes", "link"],
    "additionalProperties": False,
}
# Keys that only a storage fabric of its own takes.
_SEPARATE_ONLY = ("server_nics", "spines", "fabric_link")


@dataclass(frozen=True)
class FrontEndSpec:
    """The front-end network: ``nics_per_server`` NICs per GPU server and one
    per client on leaves of ``nics_per_leaf`` host ports, every leaf linked
    to every one of ``spines`` spines."""

    link: LinkSpec
    fabric_link: LinkSpec
    nics_per_server: int = 1
    clients: int = 1
    nics_per_leaf: int = DEFAULT_NICS_PER_LEAF
    spines: int = DEFAULT_SIDE_SPINES
    fabric_link_given: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"nics_per_server": self.nics_per_server,
                                "link": self.link.to_dict()}
        if self.fabric_link_given:
            data["fabric_link"] = self.fabric_link.to_dict()
        if self.clients != 1:
            data["clients"] = self.clients
        if self.nics_per_leaf != DEFAULT_NICS_PER_LEAF:
            data["nics_per_leaf"] = self.nics_per_leaf
        if self.spines != DEFAULT_SIDE_SPINES:
            data["spines"] = self.spines
        return data


@dataclass(frozen=True)
class StorageSpec:
    """Storage nodes (``nodes`` per site, ``nics_per_node`` NICs each) and
    where they sit: ``network`` (module docstring)."""

    nodes: int
    link: LinkSpec
    fabric_link: LinkSpec
    nics_per_node: int = 1
    network: str = "separate"
    server_nics: int = 1  # storage NICs per GPU server (a separate fabric only)
    nics_per_leaf: int = DEFAULT_NICS_PER_LEAF
    spines: int = DEFAULT_SIDE_SPINES
    fabric_link_given: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"nodes": self.nodes, "nics_per_node": self.nics_per_node,
                                "link": self.link.to_dict(), "network": self.network}
        if self.network == "separate":
            data["server_nics"] = self.server_nics
            if self.spines != DEFAULT_SIDE_SPINES:
                data["spines"] = self.spines
            if self.fabric_link_given:
                data["fabric_link"] = self.fabric_link.to_dict()
        if self.nics_per_leaf != DEFAULT_NICS_PER_LEAF:
            data["nics_per_leaf"] = self.nics_per_leaf
        return data


ParseLink = Callable[[Mapping[str, Any], Sequence[str]], "LinkSpec"]
Fail = Callable[[Sequence[str], str], TopologyError]


def _leaves(nics: int, per_leaf: int) -> int:
    return math.ceil(nics / per_leaf) if nics else 0


def front_end_spec(data: Mapping[str, Any], servers: int, sites: int, link: ParseLink,
                   fail: Fail) -> FrontEndSpec | None:
    """The checked ``front_end`` key (already schema-checked), or None."""
    raw = data.get("front_end")
    if raw is None:
        return None
    nic_link = link(raw["link"], ["front_end", "link"])
    fabric = link(raw["fabric_link"], ["front_end", "fabric_link"]) if "fabric_link" in raw \
        else nic_link
    spec = FrontEndSpec(link=nic_link, fabric_link=fabric,
                        nics_per_server=raw.get("nics_per_server", 1),
                        clients=raw.get("clients", 1),
                        nics_per_leaf=raw.get("nics_per_leaf", DEFAULT_NICS_PER_LEAF),
                        spines=raw.get("spines", DEFAULT_SIDE_SPINES),
                        fabric_link_given="fabric_link" in raw)
    _check_leaf(spec.nics_per_leaf, spec.spines, ["front_end"], fail)
    nics = servers * spec.nics_per_server + spec.clients
    storage = data.get("storage")
    if isinstance(storage, Mapping) and storage.get("network") == "front-end":
        nics += storage["nodes"] * storage.get("nics_per_node", 1)  # on the same leaves
    _check_room(_leaves(nics, spec.nics_per_leaf) * sites, ["front_end", "nics_per_leaf"],
                f"{nics} front-end NICs per site", fail)
    return spec


def storage_spec(data: Mapping[str, Any], servers: int, sites: int, link: ParseLink,
                 fail: Fail) -> StorageSpec | None:
    """The checked ``storage`` key (already schema-checked), or None."""
    raw = data.get("storage")
    if raw is None:
        return None
    network = raw.get("network", "separate")
    if network != "separate":
        extra = [key for key in _SEPARATE_ONLY if key in raw]
        if extra:
            raise fail(["storage", extra[0]],
                       f"applies to a storage fabric of its own only (network: separate), "
                       f"not network: {network}; drop it or set network: separate")
    if network == "front-end" and "front_end" not in data:
        raise fail(["storage", "network"],
                   "front-end needs a front_end key (the fabric storage shares); add one "
                   "or use network: separate or backend")
    nic_link = link(raw["link"], ["storage", "link"])
    fabric = link(raw["fabric_link"], ["storage", "fabric_link"]) if "fabric_link" in raw \
        else nic_link
    spec = StorageSpec(nodes=raw["nodes"], link=nic_link, fabric_link=fabric,
                       nics_per_node=raw.get("nics_per_node", 1), network=network,
                       server_nics=raw.get("server_nics", 1),
                       nics_per_leaf=raw.get("nics_per_leaf", DEFAULT_NICS_PER_LEAF),
                       spines=raw.get("spines", DEFAULT_SIDE_SPINES),
                       fabric_link_given="fabric_link" in raw)
    if network == "separate":
        _check_leaf(spec.nics_per_leaf, spec.spines, ["storage"], fail)
    nics = spec.nodes * spec.nics_per_node + (servers * spec.server_nics
                                              if network == "separate" else 0)
    if network == "front-end":
        return spec  # its NICs fill the front-end's leaves, counted there
    _check_room(_leaves(nics, spec.nics_per_leaf) * sites, ["storage", "nics_per_leaf"],
                f"{nics} storage NICs per site", fail)
    return spec


def _check_leaf(per_leaf: int, spines: int, path: list[str], fail: Fail) -> None:
    if per_leaf + spines > MAX_SIDE_LEAF_PORTS:
        raise fail([*path, "nics_per_leaf"],
                   f"{per_leaf} host ports plus {spines} spine uplinks need "
                   f"{per_leaf + spines} ports; a leaf has at most {MAX_SIDE_LEAF_PORTS}")


def _check_room(leaves: int, path: list[str], what: str, fail: Fail) -> None:
    if leaves > MAX_SIDE_LEAVES:
        raise fail(path, f"{what} need {leaves} leaves over all sites; the addressing plan "
                         f"has room for {MAX_SIDE_LEAVES}; raise nics_per_leaf")
