"""Fed flows (``size: unlimited``, or stopped by a ``stop_flow`` event): the
run posts their chunks while they run, on either clock.

A fed flow has no message in its agent's config (:mod:`.agent_config`); the
live runner posts chunks over the agents' control channel every tick, the
sim runner every half chunk of simulated time, both through
:class:`Feeder`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from emulator.run.agent_config import host_rate_bps
from emulator.run.qps import QpPlan
from emulator.scenario.spec import Scenario
from emulator.scenario.workload import stopped_flows

# Bytes of one chunk of a fed flow: this many seconds at the NIC's line rate
# (whole MTUs, at least one), and chunks kept posted ahead per QP.
FEED_CHUNK_S = 0.025
# Enough chunks that a runner held up by a busy machine for a few ticks does
# not let a flow run dry (Feeder.starved counts the times it did).
FEED_AHEAD = 8


@dataclass
class FeedState:
    qp: QpPlan
    chunk_bytes: int
    posted_bytes: int = 0
    stop_at_s: float | None = None  # offset from the run's start
    stopped: bool = False


class Feeder:
    """Keeps fed flows' QPs supplied with chunks while they run.

    On each :meth:`tick` (offset ``t`` from the start, and each agent's
    ``status``), a QP whose flow has started, is not stopped and has fewer
    than :data:`FEED_AHEAD` messages outstanding gets chunks posted up to
    that many, never past its size. A stop takes effect at the next tick:
    no chunk is posted after it; the chunks already posted (at most
    ``FEED_AHEAD`` × ``chunk_s`` of line rate, :data:`FEED_CHUNK_S` by
    default) still complete. ``starved`` counts the ticks at which a
    started, unstopped QP had nothing left posted (the runner fell behind
    feeding it: its flow ran below what it asked for; the fidelity block
    says so).
    """

    def __init__(self, scenario: Scenario, qps: Iterable[QpPlan], op_of: dict[str, str], *,
                 chunk_s: float = FEED_CHUNK_S) -> None:
        stops = stopped_flows(scenario)
        mtu = scenario.hosts.mtu_bytes
        self.op_of = op_of
        self.chunk_s = chunk_s
        self.states: list[FeedState] = []
        self.starved = 0
        for qp in qps:
            if not qp.fed:
                continue
            rate = host_rate_bps(scenario.topology, qp.src_gpu)
            chunk = max(mtu, int(rate / 8 * chunk_s) // mtu * mtu)
            stop = stops.get(qp.flow)
            self.states.append(FeedState(qp, chunk, stop_at_s=None if stop is None else stop / 1e9))

    def stop_flow(self, flow: str) -> None:
        for st in self.states:
            if st.qp.flow == flow:
                st.stopped = True

    def tick(self, t: float, status: dict[str, dict[str, Any]]) -> list[tuple[str, int, int, str]]:
        """(server, qpn, size, op) posts to make now; ``status``: server -> the
        agent's ``status`` answer."""
        posts = []
        for st in self.states:
            qp = st.qp
            if st.stop_at_s is not None and t >= st.stop_at_s:
                st.stopped = True
            if st.stopped or t < qp.start_ns / 1e9:
                continue
            qstat = status.get(qp.src_server, {}).get("qps", {}).get(str(qp.qpn))
            if qstat is None or qstat.get("error"):
                continue
            outstanding = int(qstat.get("outstanding", 0))
            if not outstanding and st.posted_bytes and (
                    qp.size_bytes is None or st.posted_bytes < qp.size_bytes):
                self.starved += 1
            room = FEED_AHEAD - outstanding
            while room > 0:
                size = st.chunk_bytes
                if qp.size_bytes is not None:
                    size = min(size, qp.size_bytes - st.posted_bytes)
                if size <= 0:
                    break
                posts.append((qp.src_server, qp.qpn, size, self.op_of.get(qp.flow, "write")))
                st.posted_bytes += size
                room -= 1
        return posts
