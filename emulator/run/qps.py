"""The queue-pair plan of a run: every flow striped over ``flow.qps`` queue pairs.

Each (flow, stripe) gets a QP number unique in the whole run
(``QPN_BASE + n``), used at **both** ends: the requester QP on the source
GPU's NIC and the responder QP on the destination GPU's NIC, each naming the
other as remote. A flow of ``size`` bytes over ``k`` QPs sends ``size // k``
bytes per QP, the first ``size % k`` QPs one byte more
(:func:`~emulator.scenario.spec.stripes`). A flow without a size, or named
by a ``stop_flow`` event, is *fed* (:mod:`.feeder`). A flow's ``rate`` cap
is shared by its QPs (``max_rate_bps`` = rate / qps each).

A flow between two GPUs of one server (inside a scale-up domain) has both
its QPs in one agent, which needs them numbered apart: its responder is
``dst_qpn`` = ``qpn`` | :data:`SAME_AGENT_QPN_BIT` (``dst_qpn`` = ``qpn``
elsewhere).

Both clocks and the results (:mod:`emulator.measure.results`) read this plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from emulator.scenario.spec import FlowSpec, Scenario, stripes
from emulator.scenario.workload import stopped_flows

QPN_BASE = 0x100
# BTH QPNs have 24 bits; plans number QPs far below this one.
SAME_AGENT_QPN_BIT = 0x800000


@dataclass(frozen=True)
class QpPlan:
    """One queue pair of one flow: ``qpn`` at both ends, ``size_bytes`` its
    share of the flow (None: unlimited)."""

    flow: str
    stripe: int
    qpn: int
    src_gpu: str
    dst_gpu: str
    src_server: str
    dst_server: str
    size_bytes: int | None
    start_ns: int
    priority: int
    dscp: int
    fed: bool
    max_rate_bps: float | None = None
    dst_qpn: int = 0  # the responder's number; 0: ``qpn``

    @property
    def responder_qpn(self) -> int:
        """The QP number at the destination GPU's NIC."""
        return self.dst_qpn or self.qpn


def plan_qps(scenario: Scenario, flows: Sequence[FlowSpec]) -> list[QpPlan]:
    """Queue pairs of every flow, numbered from :data:`QPN_BASE` in flow order."""
    topo = scenario.topology
    stops = stopped_flows(scenario)
    plans: list[QpPlan] = []
    for flow in flows:
        src, dst = topo.gpu(flow.src), topo.gpu(flow.dst)
        fed = flow.size_bytes is None or flow.id in stops
        for stripe, size in enumerate(stripes(flow.size_bytes, flow.qps)):
            plans.append(QpPlan(flow=flow.id, stripe=stripe, qpn=QPN_BASE + len(plans),
                                src_gpu=src.name, dst_gpu=dst.name, src_server=src.server,
                                dst_server=dst.server, size_bytes=size, start_ns=flow.start_ns,
                                priority=flow.priority, dscp=flow.dscp, fed=fed,
                                max_rate_bps=None if flow.rate_bps is None
                                else flow.rate_bps / flow.qps,
                                dst_qpn=0 if src.server != dst.server
                                else (QPN_BASE + len(plans)) | SAME_AGENT_QPN_BIT))
    return plans
