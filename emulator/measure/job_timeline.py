"""The timeline picture of a training step: per GPU, when it computed, when it
communicated (by kind) and when it waited (matplotlib, Agg).

One row per GPU (rank) of a :class:`~emulator.scenario.jobs_graph.StepResult`:
compute in grey; communication coloured by kind (TP, PP, DP, EP), drawn in a
thin band under the compute band so overlap shows; idle time before the
step ends hatched red (the GPU waited); critical-path communication
outlined in black. Times in ms of the step's clock (name it in ``title``:
[sim] or [analytic]).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from emulator.scenario.jobs_graph import COMM_KINDS, Node, StepResult  # noqa: E402

COLOURS = {"tp": "tab:orange", "pp": "tab:blue", "dp": "tab:green", "ep": "tab:purple",
           "kv": "tab:brown", "kv-offload": "tab:olive", "kv-fetch": "tab:cyan"}
# kinds on streams of their own, beside the GPU's compute
BESIDE = ("pp", "dp", "kv", "kv-offload", "kv-fetch")


def idle_spans(busy: Sequence[tuple[float, float]], end_s: float) -> list[tuple[float, float]]:
    """Gaps in ``busy`` (intervals, any order) between 0 and ``end_s``."""
    out, at = [], 0.0
    for a, b in sorted(busy):
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if at < end_s:
        out.append((at, end_s))
    return out


def plot_step(nodes: Sequence[Node], result: StepResult, path: str | Path, *,
              title: str = "", labels: Mapping[int, str] | None = None) -> Path:
    """Draw the timeline PNG at ``path``; returns it. ``labels`` names rows
    that are not GPUs (a serving job's storage nodes)."""
    ranks = sorted({n.rank for n in nodes})
    on_path = set(result.critical_path)
    fig, ax = plt.subplots(figsize=(11, 0.7 * len(ranks) + 1.6))  # see height_in
    ms = 1e3
    for row, rank in enumerate(ranks):
        mine = [n for n in nodes if n.rank == rank]
        busy = []
        compute = []
        for n in mine:
            a, b = result.start_s[n.id], result.end_s[n.id]
            if b <= a:
                continue
            if n.kind == "compute":
                compute.append((a * ms, (b - a) * ms))
                busy.append((a, b))
            else:
                blocking = n.kind not in BESIDE  # on the compute stream
                if blocking:
                    busy.append((a, b))
                ax.broken_barh([(a * ms, (b - a) * ms)], (row - 0.42, 0.25),
                               facecolors=COLOURS[n.kind],
                               edgecolors="black" if n.id in on_path else "none", linewidth=0.6)
        ax.broken_barh(compute, (row - 0.12, 0.5), facecolors="0.6")
        idle = [] if rank in (labels or {}) else [  # a storage node computes nothing
            (a * ms, (b - a) * ms) for a, b in idle_spans(busy, result.iteration_s)]
        ax.broken_barh(idle, (row - 0.12, 0.5), facecolors="none", edgecolors="tab:red",
                       hatch="///", linewidth=0)
    names = labels or {}
    ax.set_yticks(range(len(ranks)), [names.get(r, f"GPU {r}") for r in ranks])
    ax.invert_yaxis()
    ax.set_xlim(0, result.iteration_s * ms)
    ax.set_xlabel("time in the step (ms)")
    exposed = ", ".join(f"{k.upper()} {result.exposed_s[k] * ms:.2f}" for k in COMM_KINDS
                        if result.exposed_s[k] > 0)
    ax.set_title(f"{title}  iteration {result.iteration_s * ms:.2f} ms, compute "
                 f"{result.compute_s * ms:.2f} ms; exposed (ms): {exposed or 'none'}".strip(),
                 fontsize=9)
    handles = [Patch(facecolor="0.6", label="compute"),
               Patch(facecolor="none", edgecolor="tab:red", hatch="///", label="waiting")]
    handles += [Patch(facecolor=COLOURS[k], label=k.upper()) for k in COMM_KINDS]
    height_in = 0.7 * len(ranks) + 1.6
    # the legend in a strip of the figure's own (0.35 in), whatever its height
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.35 / height_in, 1, 1))
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
