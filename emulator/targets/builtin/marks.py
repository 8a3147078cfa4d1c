"""CE marks per egress queue, read from the loaded P4 program.

ECN marking is the program's business (fabric.p4's egress marks CE above a
queue-depth threshold and counts it in ``FabricEgress.ecn_counter``, one
cell per ``port * 8 + priority``); the switch keeps no count of its own.
The counter lives in this process (:class:`~emulator.p4.exec.externs.Counter`),
so reading it here costs a list lookup per queue, not a P4Runtime round
trip: :func:`install_marks` lets the counter series (:mod:`.counter_series`)
record it every sample, and :func:`port_stats_with_marks` adds
``ecn_marked`` to each queue of a ``GetPortStats`` answer. A program without
that counter gives no marks (the field is left out, the series records 0).
The counter counts since the program was loaded: ``ResetStats`` leaves it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

ECN_COUNTER = "FabricEgress.ecn_counter"
PRIORITIES = 8  # cells per port in fabric.p4's per-queue counters


def _slot(port: int, priority: int) -> int:
    return port * PRIORITIES + priority


def marks_reader(dataplane: Any) -> Callable[[], tuple[Sequence[int], Callable[[int, int], int]] | None]:
    """``read()`` -> (the counter's packet cells, the cell of (port, priority)),
    or None while the loaded program has no such counter."""
    def read() -> tuple[Sequence[int], Callable[[int, int], int]] | None:
        pipeline = dataplane.pipeline
        counter = None if pipeline is None else pipeline.counters.get(ECN_COUNTER)
        return None if counter is None else (counter.packets, _slot)
    return read


def install_marks(switch: Any) -> None:
    """Let ``switch``'s counter series record the CE marks of its queues."""
    switch.dataplane.series.counts.marks = marks_reader(switch.dataplane)


def port_stats_with_marks(switch: Any, ports: Iterable[int] | None = None) -> dict[str, Any]:
    """``switch.port_stats(ports)`` with ``ecn_marked`` in each queue, read in
    the data plane's thread (the same instant as the other counters)."""
    selected = None if ports is None else list(ports)
    dataplane = switch.dataplane
    read = marks_reader(dataplane)

    def stats() -> dict[str, Any]:
        out = dataplane.stats(selected)
        marks = read()
        if marks is not None:
            table, slot = marks
            for row in out["ports"]:
                for q in row["queues"]:
                    index = slot(row["port"], q["priority"])
                    q["ecn_marked"] = table[index] if index < len(table) else 0
        return out
    return switch.call_in_dataplane(stats)
