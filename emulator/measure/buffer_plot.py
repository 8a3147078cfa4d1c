"""``buffer.png``, the switches' buffer occupancy over a run, drawn from
``buffer.csv`` and ``priority_groups.csv`` (:mod:`.buffer_series`),
matplotlib (Agg): the shared pool in use per switch (the
:data:`TOP_SWITCHES` that held most, peak and share of the pool in the
legend), the lossless headroom in use below it, and at the bottom the
:data:`TOP_GROUPS` fullest ingress priority groups (their headroom part
dotted, how many samples had XOFF on in the legend). Empty inputs give
panels that say so. Times are seconds since the run's common start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from emulator.measure.behind import shade_behind  # noqa: E402
from emulator.measure.congestion_plots import empty, save  # noqa: E402

TOP_SWITCHES = 6
TOP_GROUPS = 6

SwitchSamples = list[tuple[float, int, int, int, int]]
GroupKey = tuple[str, int, int]


def switch_series(rows: Iterable[Mapping[str, Any]]) -> dict[str, SwitchSamples]:
    """``buffer.csv`` rows → {switch: [(t_s, shared used, headroom used,
    shared, headroom)]}, by time."""
    out: dict[str, SwitchSamples] = {}
    for r in rows:
        out.setdefault(str(r["switch"]), []).append(
            (float(r["t_s"]), int(r["shared_used_bytes"]), int(r["headroom_used_bytes"]),
             int(r["shared_bytes"]), int(r["headroom_bytes"])))
    for samples in out.values():
        samples.sort()
    return out


def group_series(rows: Iterable[Mapping[str, Any]]
                 ) -> dict[GroupKey, list[tuple[float, int, int, bool]]]:
    """``priority_groups.csv`` rows → {(switch, port, priority): [(t_s,
    bytes, headroom bytes, xoff)]}, by time."""
    out: dict[GroupKey, list[tuple[float, int, int, bool]]] = {}
    for r in rows:
        out.setdefault((str(r["switch"]), int(r["port"]), int(r["priority"])), []).append(
            (float(r["t_s"]), int(r["pg_bytes"]), int(r["headroom_used_bytes"]),
             bool(int(r["xoff"]))))
    for samples in out.values():
        samples.sort()
    return out


def _kb(value: float) -> str:
    return f"{value / 1e6:.3g} MB" if value >= 1e6 else f"{value / 1e3:.3g} KB"


def _step(ax: Any, samples: Sequence[tuple], column: int, color: Any, label: str,
          style: str = "-") -> None:
    ax.step([s[0] for s in samples], [s[column] / 1000 for s in samples], where="post",
            color=color, lw=1.5, ls=style, label=label)


def plot_buffer(buffer: Sequence[Mapping[str, Any]], groups: Sequence[Mapping[str, Any]],
                path: str | Path, *, title: str = "", duration_s: float | None = None,
                behind: Sequence[tuple[float, float]] = ()) -> Path:
    """Draw ``buffer.png`` (see the module docstring) from the rows of
    ``buffer.csv`` and ``priority_groups.csv``."""
    switches = switch_series(buffer)
    pgs = group_series(groups)
    fig, (ax_sh, ax_hr, ax_pg) = plt.subplots(
        3, 1, figsize=(11, 9), sharex=True, gridspec_kw={"height_ratios": [3, 2, 3]})
    fig.suptitle("Switch buffer occupancy" + (f": {title}" if title else ""))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ranked = sorted(switches, key=lambda n: (max(s[1] + s[2] for s in switches[n]), n),
                    reverse=True)
    shown = [n for n in ranked if max(s[1] + s[2] for s in switches[n]) > 0][:TOP_SWITCHES]
    color = {n: colors[i % len(colors)] for i, n in enumerate(shown)}
    if not shown:
        empty(ax_sh, "no buffer held" if switches else
              "no buffer held (buffer.csv is empty: nothing queued, or BMv2, which has no "
              "shared buffer)")
        empty(ax_hr, "")
    else:
        for n in shown:
            s = switches[n]
            peak = max(x[1] for x in s)
            _step(ax_sh, s, 1, color[n], f"{n} (peak {_kb(peak)} of {_kb(s[-1][3])}, "
                  f"{100 * peak / max(s[-1][3], 1):.2g} %)")
        more = len(ranked) - len(shown)
        ax_sh.set_title("shared pool in use" + (f" (top {len(shown)} of {len(ranked)} "
                                                f"switches)" if more > 0 else ""), fontsize=10)
        ax_sh.legend(loc="upper right", fontsize=8, framealpha=0.85)
        used_hr = [n for n in shown if max(x[2] for x in switches[n]) > 0]
        if used_hr:
            for n in used_hr:
                s = switches[n]
                _step(ax_hr, s, 2, color[n], f"{n} (peak {_kb(max(x[2] for x in s))} of "
                      f"{_kb(s[-1][4])} reserved)")
            ax_hr.legend(loc="upper right", fontsize=8, framealpha=0.85)
        else:
            empty(ax_hr, "no headroom used (no lossless group went past XOFF)")
        ax_hr.set_title("lossless headroom in use", fontsize=10)
    for ax, label in ((ax_sh, "shared (KB)"), (ax_hr, "headroom (KB)")):
        if shown:
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
    keys = sorted((k for k in pgs if max(s[1] for s in pgs[k]) > 0),
                  key=lambda k: (max(s[1] for s in pgs[k]), k), reverse=True)[:TOP_GROUPS]
    if not keys:
        empty(ax_pg, "no ingress group held bytes (priority_groups.csv has no samples)")
    else:
        for i, k in enumerate(keys):
            s = pgs[k]
            c = colors[i % len(colors)]
            xoff = sum(1 for x in s if x[3])
            _step(ax_pg, s, 1, c, f"{k[0]} in-port {k[1]} prio {k[2]} (peak "
                  f"{_kb(max(x[1] for x in s))}" + (f", XOFF in {xoff} samples" if xoff else "")
                  + ")")
            if any(x[2] for x in s):
                _step(ax_pg, s, 2, c, "_nolegend_", style=":")
        ax_pg.set_ylabel("group bytes (KB)")
        ax_pg.set_ylim(bottom=0)
        ax_pg.grid(True, alpha=0.3)
        ax_pg.legend(loc="upper right", fontsize=8, framealpha=0.85)
        ax_pg.set_title(f"fullest ingress priority groups (top {len(keys)} of {len(pgs)}; "
                        "dotted: the part in headroom)", fontsize=10)
    ax_pg.set_xlabel("time since run start (s)")
    times = [s[0] for v in switches.values() for s in v] + \
        [s[0] for v in pgs.values() for s in v]
    if times:
        ax_pg.set_xlim(left=min(0.0, min(times)), right=max([*times, duration_s or 0.0]))
    fig.tight_layout()
    shade_behind(fig, behind)
    return save(fig, path)
