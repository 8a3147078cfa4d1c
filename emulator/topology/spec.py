"""What a topology file may say, and the checked parameters it becomes.

:func:`spec_from_dict` turns the mapping read from a file into a
:class:`TopologySpec` or raises :class:`TopologyError` with ONE line naming the
source, the YAML line (when the caller knows it), the key path and what is
allowed. Checks run in this order: the shape of the mapping (a JSON Schema per
kind: unknown keys, missing keys, types, ranges), then units (rates, delays),
then shapes the schema cannot express (leaf radix, odd ``k``, address room).

Keys by kind (see README "Topologies"):

- ``rail-optimized`` and ``leaf-spine``: ``name``, ``kind``, ``servers``,
  ``gpus_per_server``, ``servers_per_leaf``, ``spines``, ``host_link``,
  ``fabric_link``; optional ``leaf_ports`` (ports of a leaf switch, hosts plus
  uplinks, default 64, at most 254 so host addresses fit one octet).
- ``fat-tree``: ``name``, ``kind``, ``k``, ``host_link``, ``fabric_link``;
  optional ``gpus_per_server`` (default 1).
- Every kind: optional ``scale_up`` (``rate`` per GPU per direction,
  ``hop_latency`` of the scale-up switch, optional ``servers_per_domain``,
  default 1). Without it GPUs of a server reach each other in zero time, as
  before the key existed.
- Every kind: optional ``sites`` (``count`` >= 2 copies of the fabric the
  other keys describe, ``border_switches`` per site, default 1, and
  ``dci_link`` with ``rate`` and ``delay`` or ``distance``, 5 us per km).
- Every kind: optional ``front_end`` and ``storage`` (:mod:`.side_spec`):
  the front-end network, storage nodes and where they sit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import jsonschema

from emulator.topology.addressing import MAX_GPUS_PER_DOMAIN, MAX_SCALE_UP_DOMAINS
from emulator.topology.errors import TopologyError
from emulator.topology.side_spec import (
    FRONT_END_SCHEMA,
    STORAGE_SCHEMA,
    FrontEndSpec,
    StorageSpec,
    front_end_spec,
    storage_spec,
)
from emulator.topology.units import (
    DELAY_HINT,
    DISTANCE_HINT,
    RATE_HINT,
    SCALE_UP_RATE_HINT,
    format_delay,
    format_rate,
    format_distance,
    parse_delay_ns,
    parse_distance_m,
    parse_rate_bps,
)

KINDS: tuple[str, ...] = ("rail-optimized", "leaf-spine", "fat-tree")
DEFAULT_LEAF_PORTS = 64
MAX_LEAF_PORTS = 254
MAX_GPUS_PER_SERVER = 64
# The third octet of a leaf prefix numbers the leaves of one rail (or plane).
MAX_LEAVES_PER_RAIL = 256
MAX_SITES = 16
# Light in fibre: about 5 us per km one way.
FIBRE_DELAY_NS_PER_M = 5

# Line numbers of keys, by key path; () is never looked up.
KeyLines = Mapping[tuple[str, ...], int]

_COUNT = "a whole number >= 1"
_LINK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "a mapping with rate and delay, e.g. {rate: 100Mbps, delay: 5us}",
    "properties": {
        "rate": {"type": ["string", "integer"], "description": RATE_HINT},
        "delay": {"type": ["string", "integer"], "description": DELAY_HINT},
    },
    "required": ["rate", "delay"],
    "additionalProperties": False,
}
_SCALE_UP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": ("a mapping with rate, hop_latency and optional servers_per_domain, "
                    "e.g. {rate: 450GBps, hop_latency: 250ns}"),
    "properties": {
        "rate": {"type": ["string", "integer"], "description": SCALE_UP_RATE_HINT},
        "hop_latency": {"type": ["string", "integer"], "description": DELAY_HINT},
        "servers_per_domain": {
            "type": "integer", "minimum": 1,
            "description": "a whole number >= 1 that divides the servers (default 1)",
        },
    },
    "required": ["rate", "hop_latency"],
    "additionalProperties": False,
}
_DCI_LINK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "a mapping with rate and distance or delay, e.g. {rate: 400Gbps, distance: 10km}",
    "properties": {
        "rate": {"type": ["string", "integer"], "description": RATE_HINT},
        "delay": {"type": ["string", "integer"], "description": DELAY_HINT},
        "distance": {"type": ["string", "integer"], "description": DISTANCE_HINT},
    },
    "required": ["rate"],
    "additionalProperties": False,
}
_SITES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": ("a mapping with count, dci_link and optional border_switches, "
                    "e.g. {count: 2, dci_link: {rate: 400Gbps, distance: 10km}}"),
    "properties": {
        "count": {"type": "integer", "minimum": 2, "maximum": MAX_SITES,
                  "description": f"a whole number from 2 to {MAX_SITES}"},
        "border_switches": {"type": "integer", "minimum": 1,
                            "description": "a whole number >= 1 (default 1)"},
        "dci_link": _DCI_LINK_SCHEMA,
    },
    "required": ["count", "dci_link"],
    "additionalProperties": False,
}
# Every key a topology file may hold; each kind takes some of them.
_PROPERTIES: dict[str, Any] = {
    "name": {
        "type": "string",
        "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        "maxLength": 64,
        "description": "letters, digits, '.', '_' and '-' (e.g. rail-4x4), at most 64",
    },
    "kind": {"enum": list(KINDS), "description": "one of " + ", ".join(KINDS)},
    "servers": {"type": "integer", "minimum": 1, "description": _COUNT},
    "k": {"type": "integer", "minimum": 2, "description": "an even whole number >= 2 (e.g. 4)"},
    "gpus_per_server": {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_GPUS_PER_SERVER,
        "description": f"a whole number from 1 to {MAX_GPUS_PER_SERVER}",
    },
    "servers_per_leaf": {"type": "integer", "minimum": 1, "description": _COUNT},
    "spines": {"type": "integer", "minimum": 1, "description": _COUNT},
    "leaf_ports": {
        "type": "integer",
        "minimum": 2,
        "maximum": MAX_LEAF_PORTS,
        "description": f"a whole number from 2 to {MAX_LEAF_PORTS} (default {DEFAULT_LEAF_PORTS})",
    },
    "host_link": _LINK_SCHEMA,
    "fabric_link": _LINK_SCHEMA,
    "scale_up": _SCALE_UP_SCHEMA,
    "sites": _SITES_SCHEMA,
    "front_end": FRONT_END_SCHEMA,
    "storage": STORAGE_SCHEMA,
}


def _object_schema(keys: Sequence[str], required: Sequence[str]) -> dict[str, Any]:
    """A mapping taking ``keys`` (in the order files write them), ``required`` among them."""
    return {
        "type": "object",
        "properties": {key: _PROPERTIES[key] for key in keys},
        "required": list(required),
        "additionalProperties": False,
    }


_OPTIONAL_TIERS = ("scale_up", "sites", "front_end", "storage")
_LEAF_SPINE_KEYS = ("name", "kind", "servers", "gpus_per_server", "servers_per_leaf", "spines",
                    "leaf_ports", "host_link", "fabric_link", *_OPTIONAL_TIERS)
_LEAF_SPINE_REQUIRED = tuple(key for key in _LEAF_SPINE_KEYS
                             if key not in ("leaf_ports", *_OPTIONAL_TIERS))
SCHEMAS: dict[str, dict[str, Any]] = {
    "rail-optimized": _object_schema(_LEAF_SPINE_KEYS, _LEAF_SPINE_REQUIRED),
    "leaf-spine": _object_schema(_LEAF_SPINE_KEYS, _LEAF_SPINE_REQUIRED),
    "fat-tree": _object_schema(
        ("name", "kind", "k", "gpus_per_server", "host_link", "fabric_link", *_OPTIONAL_TIERS),
        ("name", "kind", "k", "host_link", "fabric_link"),
    ),
}


@dataclass(frozen=True)
class LinkSpec:
    """Rate and one-way propagation delay of a class of links."""

    rate_bps: int
    delay_ns: int

    def to_dict(self) -> dict[str, str]:
        return {"rate": format_rate(self.rate_bps), "delay": format_delay(self.delay_ns)}


@dataclass(frozen=True)
class ScaleUpSpec:
    """The scale-up tier (NVLink-class): GPUs of a domain meet at one scale-up switch.

    ``rate_bps`` is each GPU's scale-up rate per direction, ``hop_latency_ns``
    the switch's hop latency; a domain holds ``servers_per_domain`` servers.
    """

    rate_bps: int
    hop_latency_ns: int
    servers_per_domain: int = 1

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"rate": format_rate(self.rate_bps),
                                "hop_latency": format_delay(self.hop_latency_ns)}
        if self.servers_per_domain != 1:
            data["servers_per_domain"] = self.servers_per_domain
        return data


@dataclass(frozen=True)
class SitesSpec:
    """Scale-across: ``count`` copies of the fabric joined by DCI links.

    Each site's ``border_switches`` link to every top-tier switch of the site;
    border ``b`` of every site links to border ``b`` of every other site over
    ``dci_link``. ``distance_m`` is kept when the file gave a distance (the
    delay is then 5 ns per metre).
    """

    count: int
    dci_link: LinkSpec
    border_switches: int = 1
    distance_m: int | None = None

    def to_dict(self) -> dict[str, Any]:
        dci: dict[str, Any] = {"rate": format_rate(self.dci_link.rate_bps)}
        if self.distance_m is not None:
            dci["distance"] = format_distance(self.distance_m)
        else:
            dci["delay"] = format_delay(self.dci_link.delay_ns)
        data: dict[str, Any] = {"count": self.count}
        if self.border_switches != 1:
            data["border_switches"] = self.border_switches
        data["dci_link"] = dci
        return data


@dataclass(frozen=True)
class TopologySpec:
    """The checked parameters of one topology.

    For a fat-tree the leaf-spine style numbers are derived from ``k``:
    ``servers`` = k³/4, ``servers_per_leaf`` = k/2 (hosts per edge switch),
    ``spines`` = (k/2)² core switches, ``leaf_ports`` = edge switch ports.
    """

    name: str
    kind: str
    servers: int
    gpus_per_server: int
    servers_per_leaf: int
    spines: int
    host_link: LinkSpec
    fabric_link: LinkSpec
    leaf_ports: int = DEFAULT_LEAF_PORTS
    k: int | None = None
    scale_up: ScaleUpSpec | None = None  # None: GPUs of a server meet in zero time
    sites: SitesSpec | None = None  # None: one site, as before the key existed
    front_end: FrontEndSpec | None = None  # None: no front-end network
    storage: StorageSpec | None = None  # None: no storage nodes

    @property
    def site_count(self) -> int:
        """Sites of the cluster; ``servers`` and the other shape keys are per site."""
        return 1 if self.sites is None else self.sites.count

    def to_dict(self) -> dict[str, Any]:
        """The mapping a topology file holds: only the keys this kind takes."""
        data: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.kind == "fat-tree":
            data["k"] = self.k
            data["gpus_per_server"] = self.gpus_per_server
        else:
            data["servers"] = self.servers
            data["gpus_per_server"] = self.gpus_per_server
            data["servers_per_leaf"] = self.servers_per_leaf
            data["spines"] = self.spines
            if self.leaf_ports != DEFAULT_LEAF_PORTS:
                data["leaf_ports"] = self.leaf_ports
        data["host_link"] = self.host_link.to_dict()
        data["fabric_link"] = self.fabric_link.to_dict()
        if self.scale_up is not None:
            data["scale_up"] = self.scale_up.to_dict()
        if self.sites is not None:
            data["sites"] = self.sites.to_dict()
        if self.front_end is not None:
            data["front_end"] = self.front_end.to_dict()
        if self.storage is not None:
            data["storage"] = self.storage.to_dict()
        return data


def topology_error(source: str, lines: KeyLines, path: Sequence[str],
                   message: str) -> TopologyError:
    """One line: ``SOURCE[:LINE]: [key 'a.b': ]MESSAGE``.

    The line is the key's own line, or its nearest enclosing key's line when
    the key is missing.
    """
    key_path = tuple(str(part) for part in path)
    line = None
    for depth in range(len(key_path), 0, -1):
        line = lines.get(key_path[:depth])
        if line is not None:
            break
    where = f"{source}:{line}" if line is not None else source
    key = f"key '{'.'.join(key_path)}': " if key_path else ""
    return TopologyError(f"{where}: {key}{message}")


def show_value(value: object) -> str:
    """A value as the user wrote it in YAML, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null (no value)"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return repr(value)


def _mapping_name(path: Sequence[str]) -> str:
    """How messages call the nested mapping at ``path``."""
    if path[0] == "sites":
        return "sites.dci_link" if len(path) > 1 else "sites"
    if path[0] in ("front_end", "storage"):
        return path[0] if len(path) == 1 else "a link"
    return "scale_up" if path[0] == "scale_up" else "a link"


def _describe_schema_error(error: jsonschema.ValidationError, kind: str) -> tuple[list[str], str]:
    """The key path and message for one schema violation."""
    path = [str(part) for part in error.absolute_path]
    hint = error.schema.get("description") if isinstance(error.schema, dict) else None
    value = error.instance
    shown = show_value(value)
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        extra = sorted((key for key in value if key not in allowed), key=str)[0]
        where = f"kind {kind}" if not path else _mapping_name(path)
        other_kinds = [other for other in KINDS if extra in SCHEMAS[other]["properties"]]
        if not path and other_kinds:
            return path + [extra], (f"does not apply to kind {kind} (it is a key of "
                                    f"{', '.join(other_kinds)}); {where} takes "
                                    f"{', '.join(allowed)}")
        return path + [extra], f"unknown key; {where} takes {', '.join(allowed)}"
    if error.validator == "required":
        missing = next(key for key in error.validator_value if key not in value)
        what = f"kind {kind}" if not path else _mapping_name(path)
        return path + [missing], f"is missing; {what} needs {', '.join(error.validator_value)}"
    if error.validator == "type":
        expected = error.validator_value
        if expected == "object":
            return path, f"{shown} is not a mapping; use {hint}"
        wanted = "a whole number" if expected == "integer" else f"a {expected}"
        if isinstance(expected, list):
            wanted = "a number or a string"
        return path, f"{shown} is not {wanted}; use {hint}"
    if error.validator == "minimum":
        return path, f"{shown} is below the minimum {error.validator_value}; use {hint}"
    if error.validator == "maximum":
        return path, f"{shown} is above the maximum {error.validator_value}; use {hint}"
    if error.validator == "enum":
        return path, f"{shown} is not a known {path[-1] if path else 'value'}; use {hint}"
    if error.validator in ("pattern", "maxLength"):
        return path, f"{shown} is not allowed; use {hint}"
    return path, error.message  # pragma: no cover - every keyword the schemas use is above


def _check_schema(data: Mapping[str, Any], kind: str, source: str, lines: KeyLines) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMAS[kind])
    errors = list(validator.iter_errors(data))
    if not errors:
        return
    described = [_describe_schema_error(error, kind) for error in errors]
    # Report the error nearest the top of the file, so fixing errors one by one
    # walks down the file.
    path, message = min(
        described,
        key=lambda item: (lines.get(tuple(item[0]), math.inf), item[0]),
    )
    raise topology_error(source, lines, path, message)


def _link(data: Mapping[str, Any], key: str, source: str, lines: KeyLines) -> LinkSpec:
    return _link_at(data[key], [key], source, lines)


def _link_at(raw: Mapping[str, Any], path: Sequence[str], source: str,
             lines: KeyLines) -> LinkSpec:
    try:
        rate_bps = parse_rate_bps(raw["rate"])
    except ValueError as exc:
        raise topology_error(source, lines, [*path, "rate"], f"{exc}; {RATE_HINT}") from None
    try:
        delay_ns = parse_delay_ns(raw["delay"])
    except ValueError as exc:
        raise topology_error(source, lines, [*path, "delay"], f"{exc}; {DELAY_HINT}") from None
    return LinkSpec(rate_bps=rate_bps, delay_ns=delay_ns)


def _scale_up(data: Mapping[str, Any], servers: int, gpus_per_server: int, source: str,
              lines: KeyLines) -> ScaleUpSpec | None:
    raw = data.get("scale_up")
    if raw is None:
        return None
    try:
        rate_bps = parse_rate_bps(raw["rate"])
    except ValueError as exc:
        raise topology_error(source, lines, ["scale_up", "rate"],
                             f"{exc}; {SCALE_UP_RATE_HINT}") from None
    try:
        hop_latency_ns = parse_delay_ns(raw["hop_latency"])
    except ValueError as exc:
        raise topology_error(source, lines, ["scale_up", "hop_latency"],
                             f"{exc}; {DELAY_HINT}") from None
    per_domain = raw.get("servers_per_domain", 1)
    if servers % per_domain:
        raise topology_error(
            source, lines, ["scale_up", "servers_per_domain"],
            f"{per_domain} does not divide the {servers} servers; use a divisor of {servers} "
            f"so every scale-up domain is whole")
    if per_domain * gpus_per_server > MAX_GPUS_PER_DOMAIN:
        raise topology_error(
            source, lines, ["scale_up", "servers_per_domain"],
            f"{per_domain} servers x {gpus_per_server} GPUs = {per_domain * gpus_per_server} "
            f"GPUs in a domain; the addressing plan has room for {MAX_GPUS_PER_DOMAIN}")
    sites = data["sites"]["count"] if isinstance(data.get("sites"), Mapping) else 1
    if servers * sites // per_domain > MAX_SCALE_UP_DOMAINS:
        raise topology_error(
            source, lines, ["scale_up", "servers_per_domain"],
            f"{servers * sites // per_domain} scale-up domains; the addressing plan has room "
            f"for {MAX_SCALE_UP_DOMAINS}, raise servers_per_domain")
    return ScaleUpSpec(rate_bps=rate_bps, hop_latency_ns=hop_latency_ns,
                       servers_per_domain=per_domain)


def _sites(data: Mapping[str, Any], leaves_per_rail: int, source: str,
           lines: KeyLines) -> SitesSpec | None:
    raw = data.get("sites")
    if raw is None:
        return None
    dci = raw["dci_link"]
    path = ["sites", "dci_link"]
    try:
        rate_bps = parse_rate_bps(dci["rate"])
    except ValueError as exc:
        raise topology_error(source, lines, path + ["rate"], f"{exc}; {RATE_HINT}") from None
    if ("delay" in dci) == ("distance" in dci):
        raise topology_error(source, lines, path,
                             "give exactly one of delay (e.g. 50us) or distance (e.g. 10km, "
                             "5us per km)")
    distance_m = None
    if "distance" in dci:
        try:
            distance_m = parse_distance_m(dci["distance"])
        except ValueError as exc:
            raise topology_error(source, lines, path + ["distance"],
                                 f"{exc}; {DISTANCE_HINT}") from None
        delay_ns = distance_m * FIBRE_DELAY_NS_PER_M
    else:
        try:
            delay_ns = parse_delay_ns(dci["delay"])
        except ValueError as exc:
            raise topology_error(source, lines, path + ["delay"],
                                 f"{exc}; {DELAY_HINT}") from None
    count = raw["count"]
    if count * leaves_per_rail > MAX_LEAVES_PER_RAIL:
        raise topology_error(
            source, lines, ["sites", "count"],
            f"{count} sites x {leaves_per_rail} leaves per rail need {count * leaves_per_rail} "
            f"leaves per rail; the addressing plan has room for {MAX_LEAVES_PER_RAIL}")
    return SitesSpec(count=count, dci_link=LinkSpec(rate_bps=rate_bps, delay_ns=delay_ns),
                     border_switches=raw.get("border_switches", 1), distance_m=distance_m)


def _leaf_spine_spec(data: Mapping[str, Any], kind: str, host_link: LinkSpec,
                     fabric_link: LinkSpec, source: str, lines: KeyLines) -> TopologySpec:
    servers = data["servers"]
    gpus = data["gpus_per_server"]
    per_leaf = data["servers_per_leaf"]
    spines = data["spines"]
    leaf_ports = data.get("leaf_ports", DEFAULT_LEAF_PORTS)
    host_ports = per_leaf if kind == "rail-optimized" else per_leaf * gpus
    if host_ports + spines > leaf_ports:
        ports_text = (f"{per_leaf} host ports" if kind == "rail-optimized"
                      else f"{per_leaf} servers x {gpus} GPUs = {host_ports} host ports")
        raise topology_error(
            source, lines, ["servers_per_leaf"],
            f"{ports_text} plus {spines} spine uplinks need {host_ports + spines} ports but a "
            f"leaf has leaf_ports={leaf_ports}; lower servers_per_leaf or spines, or raise "
            f"leaf_ports (at most {MAX_LEAF_PORTS})",
        )
    leaves_per_rail = math.ceil(servers / per_leaf)
    if leaves_per_rail > MAX_LEAVES_PER_RAIL:
        raise topology_error(
            source, lines, ["servers"],
            f"{servers} servers at {per_leaf} per leaf need {leaves_per_rail} leaves per rail; "
            f"the addressing plan has room for {MAX_LEAVES_PER_RAIL} (servers <= "
            f"{MAX_LEAVES_PER_RAIL * per_leaf} at this servers_per_leaf)",
        )
    return TopologySpec(name=data["name"], kind=kind, servers=servers, gpus_per_server=gpus,
                        servers_per_leaf=per_leaf, spines=spines, host_link=host_link,
                        fabric_link=fabric_link, leaf_ports=leaf_ports,
                        scale_up=_scale_up(data, servers, gpus, source, lines),
                        sites=_sites(data, leaves_per_rail, source, lines))


def _fat_tree_spec(data: Mapping[str, Any], host_link: LinkSpec, fabric_link: LinkSpec,
                   source: str, lines: KeyLines) -> TopologySpec:
    k = data["k"]
    gpus = data.get("gpus_per_server", 1)
    if k % 2:
        raise topology_error(source, lines, ["k"],
                             f"{k} is odd; a fat-tree needs an even k >= 2 (e.g. 4)")
    half = k // 2
    edges = k * half
    if edges > MAX_LEAVES_PER_RAIL:
        raise topology_error(
            source, lines, ["k"],
            f"k={k} gives {edges} edge switches; the addressing plan has room for "
            f"{MAX_LEAVES_PER_RAIL} (k <= 22)",
        )
    edge_ports = half * gpus + half
    if edge_ports > MAX_LEAF_PORTS:
        raise topology_error(
            source, lines, ["gpus_per_server"],
            f"{half} servers x {gpus} GPUs plus {half} uplinks need {edge_ports} ports on an "
            f"edge switch; the addressing plan allows {MAX_LEAF_PORTS}",
        )
    return TopologySpec(name=data["name"], kind="fat-tree", servers=k * half * half,
                        gpus_per_server=gpus, servers_per_leaf=half, spines=half * half,
                        host_link=host_link, fabric_link=fabric_link, leaf_ports=edge_ports, k=k,
                        scale_up=_scale_up(data, k * half * half, gpus, source, lines),
                        sites=_sites(data, edges, source, lines))


def spec_from_dict(data: object, source: str = "<dict>",
                   lines: KeyLines | None = None) -> TopologySpec:
    """Check a topology mapping and return its parameters.

    ``source`` names where the mapping came from (a file path) and ``lines``
    maps key paths to YAML line numbers; both only shape error messages.
    """
    lines = lines or {}
    if not isinstance(data, Mapping):
        found = "an empty document" if data is None else show_value(data)
        raise TopologyError(
            f"{source}: a topology is a mapping of keys (name, kind, ...), not {found}")
    bad_keys = [key for key in data if not isinstance(key, str)]
    if bad_keys:
        raise topology_error(source, lines, [str(bad_keys[0])], "keys must be names (strings)")
    kind = data.get("kind")
    if kind is None:
        raise topology_error(source, lines, ["kind"], "is missing; use one of " + ", ".join(KINDS))
    if kind not in KINDS:
        raise topology_error(source, lines, ["kind"],
                             f"{show_value(kind)} is not a known kind; use one of "
                             + ", ".join(KINDS))
    _check_schema(data, kind, source, lines)
    host_link = _link(data, "host_link", source, lines)
    fabric_link = _link(data, "fabric_link", source, lines)
    if kind == "fat-tree":
        spec = _fat_tree_spec(data, host_link, fabric_link, source, lines)
    else:
        spec = _leaf_spine_spec(data, kind, host_link, fabric_link, source, lines)
    return replace(spec, **_side_networks(data, spec.servers, source, lines))


def _side_networks(data: Mapping[str, Any], servers: int, source: str,
                   lines: KeyLines) -> dict[str, Any]:
    """The ``front_end`` and ``storage`` keys, checked (:mod:`.side_spec`)."""
    sites = data["sites"]["count"] if isinstance(data.get("sites"), Mapping) else 1

    def link(raw: Mapping[str, Any], path: Sequence[str]) -> LinkSpec:
        return _link_at(raw, path, source, lines)

    def fail(path: Sequence[str], message: str) -> TopologyError:
        return topology_error(source, lines, path, message)
    return {"front_end": front_end_spec(data, servers, sites, link, fail),
            "storage": storage_spec(data, servers, sites, link, fail)}

