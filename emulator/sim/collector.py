"""The garbage collector kept out of a sim run's way.

A run allocates a few objects per frame hop that live while the frame is
queued (its parsed headers, metadata, context); with thousands of frames
queued on a loaded fabric, CPython's default young-generation threshold (700
net allocations) starts a collection every few hundred hops, and each walks
the queued frames again: about 7 % of the CPU of a 128-host fat-tree
permutation [CPU], measured with ``gc.callbacks``. :func:`settled_collector`
moves what setup made (the program, tables, modules) out of the collector's
sight (:func:`~emulator.fidelity.process.settle_memory`, as a live switch
does) and collects the young generation every
:data:`YOUNG_THRESHOLD` net allocations instead, for as long as the run
goes; then puts both back. Nothing a run computes depends on it: frames
are freed by reference counting, the collector only finds cycles.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

from emulator.fidelity.process import settle_memory

YOUNG_THRESHOLD = 10_000  # net container allocations between young collections


@contextmanager
def settled_collector(young_threshold: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Freeze what exists, collect the young generation less often; undone on exit."""
    previous = gc.get_threshold()
    settle_memory()
    gc.set_threshold(young_threshold, previous[1], previous[2])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()
