"""What a pipeline hands the switch target, and what the target tells it
back: :class:`ProcessResult` (one call's packets out, drops, digests, logs,
packets for the queues, recirculations), :class:`EgressItem` (a packet
between ingress and egress), :class:`Output` (a packet leaving) and
:class:`QueueInfo` (the queue a packet leaves, for egress).

They are a module of their own, in the speedups group
(:mod:`emulator.speedups`), so that the data plane
(:mod:`emulator.targets.builtin.dataplane`) and a program's compiled module
(:mod:`.cython_module`) both ``cimport`` them from ``results.pxd`` and read
their fields in C; run as Python they are the same classes with slots.
"""

from __future__ import annotations

import cython  # (its decorators: nothing in Python; free lists where compiled)


@cython.freelist(32)
@cython.cclass
class Output:
    """A packet leaving the switch on ``port``."""

    __slots__ = ("port", "data", "instance_type", "priority")

    def __init__(self, port: int, data: bytes, instance_type: int = 0, priority: int = 0) -> None:
        self.port = port
        self.data = data
        self.instance_type = instance_type
        self.priority = priority

    def __repr__(self) -> str:
        return (f"Output(port={self.port}, data={self.data!r}, instance_type={self.instance_type}, "
                f"priority={self.priority})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Output) and (self.port, self.data, self.instance_type, self.priority) \
            == (other.port, other.data, other.instance_type, other.priority)


@cython.freelist(32)
@cython.cclass
class QueueInfo:
    """What the traffic manager tells egress about the packet's queue
    (BMv2's queueing metadata): depths in packets of the packet's own
    priority queue, times in microseconds. Good for the egress call it is
    given to: the switch target sets one per port anew for each packet.
    ``lent_refs``: references to the frame the packet came in that whoever
    delivered it holds only to hand it over (dropped after the call, the
    bytes never read again); the compiled egress counts them as its own
    when it checks that nobody else holds the frame it may rewrite in place
    (:mod:`.driver`'s ``_rewrite_out``)."""

    __slots__ = ("enq_qdepth", "deq_qdepth", "enq_timestamp_us", "lent_refs")

    def __init__(self, enq_qdepth: int = 0, deq_qdepth: int = 0,
                 enq_timestamp_us: float | None = None, lent_refs: int = 0) -> None:
        self.enq_qdepth = enq_qdepth
        self.deq_qdepth = deq_qdepth
        self.enq_timestamp_us = enq_timestamp_us
        self.lent_refs = lent_refs


@cython.freelist(32)
@cython.cclass
class EgressItem:
    """A packet between ingress and egress: the traffic manager queues it
    on (``port``, ``priority``); ``length`` is its ingress length in bytes."""

    __slots__ = ("port", "priority", "length", "pkt")

    def __init__(self, port: int, priority: int, length: int, pkt: object) -> None:
        self.port = port
        self.priority = priority
        self.length = length
        self.pkt = pkt  # the packet frame (headers, metadata, context)


@cython.freelist(32)
@cython.cclass
class ProcessResult:
    """What one call into the pipeline produced: packets out, drops,
    digests and log lines for the control plane, packets for the egress
    queues and packets to feed back into ingress (recirculation).

    One made with ``ProcessResult()`` holds lists; in one that
    :meth:`V1ModelPipeline.ingress` or ``egress`` returns, a field with
    nothing in it may be a shared empty tuple (read it, don't add to it)."""

    __slots__ = ("outputs", "dropped", "digests", "logs", "queued", "recirculate")

    def __init__(self, outputs: list[Output] | None = None, dropped: int = 0,
                 digests: list[tuple[str, object]] | None = None, logs: list[str] | None = None,
                 queued: list[EgressItem] | None = None,
                 recirculate: list[tuple[int, bytes, int, dict]] | None = None) -> None:
        self.outputs = outputs or []
        self.dropped = dropped
        self.digests = digests or []
        self.logs = logs or []
        self.queued = queued or []
        self.recirculate = recirculate or []
