"""htsim's connection matrices (``.cm`` files) as scenario flows.

htsim (the datacenter simulator of Raiciu, Handley et al.) reads its traffic
from a connection matrix: a header ``Nodes N`` and ``Connections C``, then
one line per connection, ``SRC->DST [id I] start T size S`` (hosts numbered
from 0; newer files name each connection with ``id``; some older ones give
only ``SRC->DST``). Host *i* is the *i*-th GPU of the topology in its own
order, which for a fat-tree is htsim's (pod by pod, edge by edge). ``start``
is read in microseconds (``start_unit_ns`` says otherwise); every
connection of a permutation starts at 0.

:func:`flows_from_cm` gives the ``workload.flows`` entries of a scenario
(``id`` ``cm-I``, ``src``, ``dst``, ``size`` in bytes, ``start`` in ns), so
``perm_128n_128c_2MB.cm`` on a k = 8 fat-tree is 128 flows of 2 MB.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

_LINE = re.compile(r"^\s*(\d+)\s*->\s*(\d+)((?:\s+\w+\s+[-+.\deE]+)*)\s*$")


class ConnectionMatrixError(ValueError):
    """A line of a connection matrix that is not one."""


def flows_from_cm(text: str, gpus: Sequence[str], *, source: str = "<cm>",
                  start_unit_ns: int = 1000) -> list[dict[str, Any]]:
    """The flows of connection matrix ``text`` over ``gpus`` (GPU names in
    topology order); raises :class:`ConnectionMatrixError` naming the line."""
    flows: list[dict[str, Any]] = []
    nodes: int | None = None
    declared: int | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head = line.split()
        if head[0] in ("Nodes", "Connections", "Triggers", "Failures") and len(head) == 2:
            value = _int(head[1], source, number, head[0])
            if head[0] == "Nodes":
                nodes = value
                if value > len(gpus):
                    raise ConnectionMatrixError(
                        f"{source}:{number}: {value} nodes, but the topology has {len(gpus)} "
                        f"GPUs; pick a topology with at least {value}")
            elif head[0] == "Connections":
                declared = value
            continue
        match = _LINE.match(line)
        if match is None:
            raise ConnectionMatrixError(
                f"{source}:{number}: {line!r} is not 'SRC->DST [id I] start T size S'")
        src, dst = int(match.group(1)), int(match.group(2))
        fields = match.group(3).split()
        attrs = dict(zip(fields[::2], fields[1::2]))
        limit = nodes if nodes is not None else len(gpus)
        for host in (src, dst):
            if host >= limit:
                raise ConnectionMatrixError(f"{source}:{number}: host {host} is not below "
                                            f"{limit}")
        if src == dst:
            raise ConnectionMatrixError(f"{source}:{number}: {src}->{dst} sends to itself")
        ident = attrs.get("id", str(len(flows) + 1))
        flow: dict[str, Any] = {"id": f"cm-{ident}", "src": gpus[src], "dst": gpus[dst],
                                "size": _int(attrs.get("size", "0"), source, number, "size")}
        start = float(attrs.get("start", "0"))
        if start < 0:
            raise ConnectionMatrixError(f"{source}:{number}: start {start} is negative")
        flow["start"] = f"{round(start * start_unit_ns)}ns"
        if not flow["size"]:
            raise ConnectionMatrixError(f"{source}:{number}: no size; htsim's flows here "
                                        f"need one (size S in bytes)")
        flows.append(flow)
    if declared is not None and declared != len(flows):
        raise ConnectionMatrixError(f"{source}: says Connections {declared} but has "
                                    f"{len(flows)}")
    return flows


def _int(text: str, source: str, number: int, what: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise ConnectionMatrixError(f"{source}:{number}: {what} {text!r} is not a number") \
            from None
    if value < 0:
        raise ConnectionMatrixError(f"{source}:{number}: {what} {text!r} is negative")
    return value
