"""htsim's connection matrices (``.cm`` files) as scenario flows, and as a
scenario file (``aifabric scenario from-htsim``).

htsim (the datacenter simulator of Raiciu, Handley et al.; Broadcom's
csg-htsim) reads its traffic from a connection matrix: a header of
``Nodes N``, ``Connections C`` (and ``Triggers``/``Failures``), then one
line per connection::

    SRC->DST [id I] start T [size S]

hosts numbered from 0, then ``key value`` pairs in any order. What htsim's
``ConnectionMatrix::load`` does with them, and so what this reader does:

- ``size`` is bytes (the flow size given to the sender); a connection
  without one sends until the end (``unlimited`` here).
- ``start`` is in **picoseconds** in csg-htsim (its loader stores it as the
  start time as is, and its generators write µs × 10⁶); the original htsim
  and ``ConnectionMatrix::save`` write µs. ``start_unit`` says which
  (``ps``, the default, ``ns`` or ``us``); times are rounded to whole ns.
  A connection must have a start, as htsim requires.
- ``id`` names the flow (``cm-I``; 0 is refused, as htsim does); without one
  the flow is ``cm-`` and its line number.
- Flows started by triggers (``trigger``, ``send_done_trigger``,
  ``recv_done_trigger``, ``addon`` and ``trigger``/``failure`` lines) and
  ``prio`` have no equivalent in a scenario's flows (they start at times):
  such a line is refused, as is any other key.

Host *i* is the *i*-th GPU of the topology in its own order, which for a
fat-tree is htsim's (host i under edge switch i / (k/2), pod by pod).
Every mistake raises :class:`ConnectionMatrixError`, one line naming the
file and line. :func:`flows_from_cm` gives ``workload.flows`` entries;
:func:`scenario_text` a whole scenario file.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Sequence

import yaml

from emulator.scenario.errors import ScenarioError

START_UNITS_NS = {"ps": 1e-3, "ns": 1.0, "us": 1e3}
_HEAD = re.compile(r"^(\d+)->(\d+)$")
_TRIGGERS = ("trigger", "send_done_trigger", "recv_done_trigger", "addon")
_HEADER = ("Nodes", "Connections", "Triggers", "Failures")
# The default duration of a converted scenario: this many times what the
# busiest host needs at its line rate, after the last start.
DURATION_MARGIN = 20
MIN_DURATION_NS = 1_000_000


class ConnectionMatrixError(ScenarioError):
    """A connection matrix (or a line of it) that cannot be used."""


def flows_from_cm(text: str, gpus: Sequence[str], *, source: str = "<cm>",
                  start_unit: str = "ps") -> list[dict[str, Any]]:
    """The flows of connection matrix ``text`` over ``gpus`` (GPU names in
    topology order); raises :class:`ConnectionMatrixError` naming the line."""
    if start_unit not in START_UNITS_NS:
        raise ConnectionMatrixError(f"start unit {start_unit!r} is not one of "
                                    f"{', '.join(START_UNITS_NS)}")
    scale = START_UNITS_NS[start_unit]
    flows: list[dict[str, Any]] = []
    nodes: int | None = None
    declared: int | None = None
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        tokens = raw.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        where = f"{source}:{number}"
        if tokens[0] in _HEADER:
            if len(tokens) != 2:
                raise ConnectionMatrixError(f"{where}: expected '{tokens[0]} N'")
            value = _int(tokens[1], where, tokens[0])
            if tokens[0] == "Nodes":
                nodes = value
                if value > len(gpus):
                    raise ConnectionMatrixError(
                        f"{where}: Nodes {value}, but the topology has {len(gpus)} GPUs; "
                        f"pick a topology with at least {value}")
            elif tokens[0] == "Connections":
                declared = value
            continue
        if tokens[0] in ("trigger", "failure"):
            raise ConnectionMatrixError(f"{where}: {tokens[0]} lines are not supported "
                                        f"(scenario flows start at times)")
        match = _HEAD.match(tokens[0])
        if match is None:
            raise ConnectionMatrixError(
                f"{where}: {raw.strip()!r} is not 'SRC->DST [id I] start T [size S]' "
                f"nor a header ({', '.join(_HEADER)})")
        src, dst = int(match.group(1)), int(match.group(2))
        limit = nodes if nodes is not None else len(gpus)
        for host in (src, dst):
            if host >= limit:
                raise ConnectionMatrixError(f"{where}: host {host} is not below {limit}"
                                            + (" (Nodes)" if nodes is not None else
                                               " (the topology's GPUs)"))
        if src == dst:
            raise ConnectionMatrixError(f"{where}: {src}->{dst} sends to itself")
        attrs = _attributes(tokens[1:], where)
        ident = attrs.get("id", f"line{number}")
        if ident in seen:
            raise ConnectionMatrixError(f"{where}: id {ident} again (first on line "
                                        f"{seen[ident]})")
        seen[ident] = number
        if "start" not in attrs:
            raise ConnectionMatrixError(f"{where}: no start (start T, in {start_unit})")
        start_ns = round(float(attrs["start"]) * scale)
        flow: dict[str, Any] = {"id": f"cm-{ident}", "src": gpus[src], "dst": gpus[dst],
                                "size": int(attrs["size"]) if "size" in attrs else "unlimited",
                                "start": f"{start_ns}ns"}
        flows.append(flow)
    if declared is not None and declared != len(flows):
        raise ConnectionMatrixError(f"{source}: says Connections {declared} but has "
                                    f"{len(flows)}")
    if not flows:
        raise ConnectionMatrixError(f"{source}: no connections")
    return flows


def _attributes(tokens: Sequence[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        key = tokens[i]
        if key in _TRIGGERS:
            raise ConnectionMatrixError(f"{where}: '{key}' (flows started by triggers) is not "
                                        f"supported: scenario flows start at times")
        if key not in ("id", "start", "size"):
            raise ConnectionMatrixError(f"{where}: unknown key {key!r}; known: id, start, "
                                        f"size")
        if i + 1 >= len(tokens):
            raise ConnectionMatrixError(f"{where}: {key} has no value")
        value = tokens[i + 1]
        if key == "start":
            try:
                number = float(value)
            except ValueError:
                raise ConnectionMatrixError(f"{where}: start {value!r} is not a number") \
                    from None
            if not 0 <= number < math.inf:
                raise ConnectionMatrixError(f"{where}: start {value!r} is not >= 0")
        else:
            number = _int(value, where, key)
            if number == 0:
                raise ConnectionMatrixError(f"{where}: {key} 0 is not allowed"
                                            + (" (htsim refuses flow id 0)" if key == "id"
                                               else ""))
        out[key] = value if key == "start" else str(int(number))
        i += 2
    return out


def _int(text: str, where: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConnectionMatrixError(f"{where}: {what} {text!r} is not a whole number") \
            from None
    if value < 0:
        raise ConnectionMatrixError(f"{where}: {what} {text!r} is negative")
    return value


def default_duration_ns(flows: Sequence[dict[str, Any]], rate_bps: float) -> int:
    """:data:`DURATION_MARGIN` × the time the busiest host link direction
    (what one host sends, or receives) needs at ``rate_bps``, after the last
    start; at least :data:`MIN_DURATION_NS`, rounded up to 1, 2 or 5 × 10ⁿ
    ns."""
    load: dict[tuple[str, str], int] = {}
    for flow in flows:
        if isinstance(flow["size"], int):
            for end in ("src", "dst"):
                key = (end, flow[end])
                load[key] = load.get(key, 0) + flow["size"]
    last_start = max(int(flow["start"][:-2]) for flow in flows)
    busiest_ns = max(load.values(), default=0) * 8 / rate_bps * 1e9
    wanted = max(last_start + DURATION_MARGIN * busiest_ns, MIN_DURATION_NS)
    exp = 10 ** math.floor(math.log10(wanted))
    for mantissa in (1, 2, 5, 10):
        if mantissa * exp >= wanted:
            return int(mantissa * exp)
    return int(10 * exp)  # not reached


def _duration_text(duration_ns: int) -> str:
    for unit, size in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if duration_ns % size == 0:
            return f"{duration_ns // size}{unit}"
    return f"{duration_ns}ns"


def scenario_text(cm_path: str | os.PathLike[str], topology_path: str | os.PathLike[str],
                  out_path: str | os.PathLike[str], *, start_unit: str = "ps",
                  name: str | None = None, duration_ns: int | None = None) -> str:
    """The scenario file ``out_path`` should hold to run connection matrix
    ``cm_path`` over the topology file ``topology_path`` (referred to
    relative to ``out_path``). Switch and host settings are the defaults:
    the header comment says what to set to match an htsim run."""
    from emulator.topology import load_topology

    cm, topo_file, out = Path(cm_path), Path(topology_path), Path(out_path)
    try:
        text = cm.read_text()
    except OSError as exc:
        raise ConnectionMatrixError(f"{cm}: cannot read it: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConnectionMatrixError(f"{cm}: not a text file") from None
    topology = load_topology(topo_file)
    flows = flows_from_cm(text, [g.name for g in topology.gpus], source=str(cm),
                          start_unit=start_unit)
    host_rate = min(link.rate_bps for link in topology.links if link.kind == "host")
    duration = duration_ns if duration_ns is not None else default_duration_ns(flows,
                                                                                 host_rate)
    label = name or re.sub(r"[^A-Za-z0-9._-]", "-", cm.stem)[:64] or "htsim"
    relative = os.path.relpath(topo_file.resolve(), out.resolve().parent)
    data = {"name": label,
            "description": f"htsim connection matrix {cm.name} ({len(flows)} flows) "
                           f"on {topology.name}",
            "topology": relative, "duration": _duration_text(duration),
            "workload": {"flows": flows}}
    header = (f"# Converted by 'aifabric scenario from-htsim' from {cm.name} (start read in "
              f"{start_unit}):\n"
              f"# htsim host i is the i-th GPU of {topo_file.name}. Switch and host settings\n"
              f"# are aifabric's defaults; to match an htsim run set e.g. hosts.mtu,\n"
              f"# switches.pfc (xoff, xon) and switches.ecn / hosts.dcqcn, and run it on the\n"
              f"# virtual clock: aifabric run {out.name} --target sim\n")
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)
