"""Plots of what the hosts saw during a run, from ``series.csv`` and
``pauses.csv`` (:mod:`emulator.measure.run_series`), matplotlib (Agg):

- ``pauses.png``: the PFC pause timeline, one row per switch egress queue
  or host NIC priority that was paused, its intervals shaded (switch rows
  from the switches' periodic queue samples, host rows exact), total paused time and
  interval count at the right.
- ``ecn_cnp.png``: per time bin, the CE-marked packets the receivers got
  and the CNPs they sent (stacked per flow), and the senders' transmit
  rate below, with a line where marking started: when the fabric began to
  signal congestion and how the senders answered.
- :func:`draw_goodput`: the measured per-flow throughput panel of
  ``flow_rates.png`` (:mod:`.plots` draws the figure).

Every function draws something that says what is missing when its input
is empty. Times are seconds since the run's common start; flows keep the
colour :func:`flow_colors` gives them in every plot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from emulator.measure.behind import shade_behind  # noqa: E402
from emulator.measure.report import fmt_seconds  # noqa: E402

MAX_FLOWS = 8            # flows drawn one by one; the rest are summed as "other flows"
SMOOTH_BINS = 5          # bins averaged in the thick goodput line
MAX_PAUSE_ROWS = 24      # pause rows drawn (those paused longest)
MIN_BAR_FRACTION = 0.0015  # a pause narrower than this share of the axis is drawn this wide
OTHER = "other flows"
KIND_COLOR = {"switch": "tab:red", "host": "tab:blue"}
PauseKey = tuple[str, str, str, int]
DEFAULT_BIN_S = 0.01


def flow_colors(flows: Iterable[str]) -> dict[str, Any]:
    """A colour per flow, in the given order (tab10, then tab20 past ten flows)."""
    names = list(dict.fromkeys(flows))
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    colors = {name: cmap(i % cmap.N) for i, name in enumerate(names)}
    colors[OTHER] = "0.6"
    return colors


def empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes,
            fontsize=12, color="0.4", wrap=True)
    ax.set_yticks([])


def save(fig: Any, path: str | Path) -> Path:
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def rate_scale(top_bps: float) -> tuple[float, str]:
    return (1e9, "Gb/s") if top_bps >= 1e9 else (1e6, "Mb/s") if top_bps >= 1e6 \
        else (1e3, "kb/s")


# -- series.csv -------------------------------------------------------------------------

def per_flow(rows: Iterable[dict[str, Any]], columns: Sequence[str]
             ) -> dict[str, dict[float, float]]:
    """``series.csv`` rows → {flow: {t_s: Σ columns over the flow's QPs}}."""
    out: dict[str, dict[float, float]] = {}
    for r in rows:
        t = round(float(r["t_s"]), 6)
        slot = out.setdefault(str(r["flow"]), {})
        slot[t] = slot.get(t, 0.0) + sum(float(r[c] or 0) for c in columns)
    return out


def bin_width(rows: Sequence[dict[str, Any]]) -> float:
    """The series' bin: the smallest step between a QP's consecutive rows."""
    by_qp: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        by_qp.setdefault((str(r["flow"]), str(r["qp"])), []).append(float(r["t_s"]))
    gaps = [b - a for ts in by_qp.values() for a, b in zip(sorted(ts), sorted(ts)[1:])
            if b - a > 1e-7]
    return round(min(gaps), 6) if gaps else DEFAULT_BIN_S


def _grid(series: dict[str, dict[float, float]], bin_s: float) -> list[float]:
    times = sorted({t for s in series.values() for t in s})
    return times + [times[-1] + bin_s] if times else []


def pick_flows(*series: dict[str, dict[float, float]], n: int = MAX_FLOWS) -> list[str]:
    """Up to ``n`` flows with something in the first series, largest total
    first (ties broken by the next series), returned in flow order."""
    names = list(dict.fromkeys(f for s in series for f in s))
    ranked = sorted(names, key=lambda f: tuple(-sum(s.get(f, {}).values()) for s in series))
    chosen = {f for f in ranked[:n] if any(v for s in series for v in s.get(f, {}).values())}
    return [f for f in names if f in chosen]


def _top(series: dict[str, dict[float, float]], keep: Sequence[str] | None = None, *,
         others: bool = True) -> dict[str, dict]:
    """The flows in ``keep`` (default :func:`pick_flows`) that have anything,
    and with ``others`` the rest summed as :data:`OTHER`."""
    keep = pick_flows(series) if keep is None else keep
    out = {f: series[f] for f in keep if f in series and any(series[f].values())}
    rest: dict[float, float] = {}
    if others:
        for f, values in series.items():
            if f not in out:
                for t, v in values.items():
                    rest[t] = rest.get(t, 0.0) + v
    if any(rest.values()):
        out[OTHER] = rest
    return out


def _stack(ax: Any, series: dict[str, dict[float, float]], bin_s: float,
           colors: dict[str, Any]) -> None:
    grid = _grid(series, bin_s)
    base = [0.0] * len(grid)
    for flow, values in series.items():
        top = [b + values.get(t, 0.0) for b, t in zip(base, grid)]
        top[-1] = top[-2] if len(top) > 1 else top[-1]   # the last bin runs to its end
        ax.fill_between(grid, base, top, step="post", color=colors.get(flow, "0.6"),
                        alpha=0.85, lw=0, label=flow)
        base = top


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """Centred mean over ``window`` values (fewer at the ends)."""
    half = window // 2
    out = []
    for i in range(len(values)):
        part = values[max(0, i - half):i + window - half]
        out.append(sum(part) / len(part))
    return out


def draw_goodput(ax: Any, rows: Sequence[dict[str, Any]], colors: dict[str, Any],
                 note_missing: str) -> bool:
    """Per-flow received payload rate (goodput) per bin as step lines (thin,
    with a :data:`SMOOTH_BINS`-bin average drawn thick over them when there
    are many bins); False (and ``note_missing`` on the axes) when there is
    nothing to draw."""
    title = "measured throughput per flow (payload accepted by the receiver)"
    series = {f: s for f, s in per_flow(rows, ("rx_bps",)).items() if any(s.values())}
    if not series:
        ax.set_title(title, fontsize=10)
        empty(ax, note_missing)
        return False
    bin_s = bin_width(rows)
    ax.set_title(title + rate_lines(ax, series, bin_s, colors, "goodput", pick_flows(series)),
                 fontsize=10)
    return True


def rate_lines(ax: Any, series: dict[str, dict[float, float]], bin_s: float,
               colors: dict[str, Any], what: str, keep: Sequence[str]) -> str:
    """Step lines of the rates (bit/s per bin) of the flows in ``keep``, thin
    under a thick :data:`SMOOTH_BINS`-bin average when there are many bins;
    labels the y axis; returns a note on what the lines are, for the title."""
    shown = _top(series, keep, others=False)
    scale, unit = rate_scale(max(v for s in shown.values() for v in s.values()))
    smooth = max(len(s) for s in shown.values()) > 4 * SMOOTH_BINS
    for flow, values in shown.items():
        times = sorted(values)
        ys = [values[t] / scale for t in times]
        color = colors.get(flow, "0.6")
        label = flow
        ax.step(times + [times[-1] + bin_s], ys + [ys[-1]], where="post",
                lw=0.8 if smooth else 1.3, alpha=0.35 if smooth else 1.0, color=color,
                label=None if smooth else label)
        if smooth:
            avg = moving_average(ys, SMOOTH_BINS)
            ax.plot([t + bin_s / 2 for t in times], avg, lw=2, color=color, label=label)
    ax.set_ylabel(f"{what} ({unit})")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    active = sum(1 for values in series.values() if any(values.values()))
    return (f"; thin: per {bin_s * 1e3:g} ms bin, thick: {SMOOTH_BINS * bin_s * 1e3:g} ms "
            "average" if smooth else f", per {bin_s * 1e3:g} ms bin") + (
        f"; {len(shown)} of {active} flows" if len(shown) < active else "")


def plot_ecn_cnp(rows: Sequence[dict[str, Any]], path: str | Path, *, title: str = "",
                 duration_s: float | None = None, missing: str | None = None,
                 behind: Sequence[tuple[float, float]] = ()) -> Path:
    """Draw ``ecn_cnp.png`` (see the module docstring) from ``series.csv`` rows."""
    ce = per_flow(rows, ("ce_packets",))
    marked = any(v for s in ce.values() for v in s.values())
    fig, (ax_ce, ax_cnp, ax_tx) = plt.subplots(
        3, 1, figsize=(11, 8 if marked else 7), sharex=True,
        gridspec_kw={"height_ratios": [2, 2, 1.8] if marked else [1, 1, 2.2]})
    fig.suptitle("ECN marks, CNPs and the senders' response" + (f": {title}" if title else ""))
    cnp = per_flow(rows, ("cnps_sent",))
    tx = per_flow(rows, ("tx_bps", "retx_bps"))
    colors = flow_colors(list(tx) + list(ce))
    bin_s = bin_width(rows)
    per_bin = f"per {bin_s * 1e3:g} ms bin"
    first_mark = min((t for s in ce.values() for t, v in s.items() if v > 0), default=None)
    panels = ((ax_ce, ce, "CE-marked packets received", "packets",
               "no ECN marks in this run (no CE-marked packet reached a receiver)"),
              (ax_cnp, cnp, "CNPs sent by the receivers", "CNPs", "no CNPs sent in this run"))
    keep = pick_flows(ce, tx)
    for ax, series, what, unit, none in panels:
        top = _top(series, keep)
        total = sum(v for s in series.values() for v in s.values())
        ax.set_title(f"{what} {per_bin}" + (f" (total {total:,.0f})" if top else ""),
                     fontsize=10)
        if missing or not top:
            empty(ax, missing or none)
            continue
        _stack(ax, top, bin_s, colors)
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9,
                  ncol=1 if len(top) <= 5 else 2)
    sent = {f: s for f, s in tx.items() if any(s.values())}
    heading = "senders' transmit rate (first transmissions + retransmissions)"
    if missing or not sent:
        ax_tx.set_title(heading, fontsize=10)
        empty(ax_tx, missing or "no data sent (series.csv has no rows)")
    else:
        ax_tx.set_title(heading + rate_lines(ax_tx, sent, bin_s, colors, "tx rate", keep),
                        fontsize=10)
        handles = ax_tx.get_legend_handles_labels()[0]
        ax_tx.legend(loc="upper right", fontsize=8, framealpha=0.9,
                     ncol=1 if len(handles) <= 5 else 2)
    if first_mark is not None and not missing:
        for ax in (ax_ce, ax_cnp, ax_tx):
            ax.axvline(first_mark, color="0.3", ls="--", lw=1)
        ax_ce.text(first_mark, 0.97, f"  marking starts (bin at {first_mark * 1e3:.0f} ms)",
                   transform=ax_ce.get_xaxis_transform(), va="top", fontsize=8, color="0.2")
    ax_tx.set_xlabel("time since run start (s)")
    end = max([duration_s or 0.0] + [t + bin_s for s in tx.values() for t in s])
    if end > 0:
        ax_tx.set_xlim(min([0.0] + [t for s in tx.values() for t in s]), end)
    fig.tight_layout()
    shade_behind(fig, behind)
    return save(fig, path)


# -- pauses.csv -------------------------------------------------------------------------

def pause_series(rows: Iterable[dict[str, Any]]) -> dict[PauseKey, list[tuple[float, float]]]:
    """``pauses.csv`` rows → {(kind, node, port, priority): [(start_s, end_s)]}, by time."""
    out: dict[PauseKey, list[tuple[float, float]]] = {}
    for r in rows:
        key = (str(r["kind"]), str(r["node"]), str(r["port"]), int(r["priority"]))
        out.setdefault(key, []).append((float(r["start_s"]), float(r["end_s"])))
    for spans in out.values():
        spans.sort()
    return out


def _pause_label(key: PauseKey) -> str:
    kind, node, port, prio = key
    return f"{node} port {port} prio {prio}" if kind == "switch" \
        else f"{node} NIC {port} prio {prio}"


def plot_pauses(rows: Iterable[dict[str, Any]], path: str | Path, *, title: str = "",
                duration_s: float | None = None, missing: str | None = None,
                behind: Sequence[tuple[float, float]] = (),
                switch_sample_s: float | None = None) -> Path:
    """Draw ``pauses.png`` (see the module docstring) from ``pauses.csv`` rows;
    ``switch_sample_s``, the switches' queue sampling interval, is named in
    the legend (switch rows are as exact as it)."""
    series = pause_series(rows)
    heading = "PFC pauses" + (f": {title}" if title else "")
    if missing or not series:
        fig, ax = plt.subplots(figsize=(11, 3))
        empty(ax, missing or "no PFC pause in this run\n(no switch queue and no host NIC "
                             "was paused)")
        ax.set_title(heading)
        ax.set_xlabel("time since run start (s)")
        ax.set_xlim(0, duration_s or 1.0)
        fig.tight_layout()
        shade_behind(fig, behind)
        return save(fig, path)
    total = {k: sum(b - a for a, b in spans) for k, spans in series.items()}
    keys = sorted(series, key=lambda k: -total[k])[:MAX_PAUSE_ROWS]
    keys.sort(key=lambda k: (k[0] != "switch", k[1], k[2], k[3]))
    end = max([duration_s or 0.0] + [b for spans in series.values() for _, b in spans])
    start = min([0.0] + [a for spans in series.values() for a, _ in spans])
    min_w = (end - start) * MIN_BAR_FRACTION
    fig, ax = plt.subplots(figsize=(11, 1.9 + 0.36 * len(keys)))
    for i, key in enumerate(keys):
        spans = series[key]
        ax.broken_barh([(a, max(b - a, min_w)) for a, b in spans], (i - 0.35, 0.7),
                       color=KIND_COLOR.get(key[0], "0.5"), alpha=0.8, lw=0)
        count = f"{len(spans)} pause" + ("s" if len(spans) != 1 else "")
        ax.text(1.005, i, f"{fmt_seconds(total[key])}, {count}", va="center",
                fontsize=8, transform=ax.get_yaxis_transform())
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([_pause_label(k) for k in keys], fontsize=8)
    ax.set_ylim(len(keys) - 0.5, -0.5)
    ax.set_xlim(start, end)
    shown = f"; the {len(keys)} paused longest of {len(series)} shown" \
        if len(keys) < len(series) else ""
    ax.set_xlabel("time since run start (s)" + shown)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(heading, loc="left")
    kinds = {k[0] for k in keys}
    every = f"{fmt_seconds(switch_sample_s)} " if switch_sample_s else ""
    legend = [Patch(color=KIND_COLOR["switch"], label="switch egress queue paused "
                                                       f"(from {every}queue samples)"),
              Patch(color=KIND_COLOR["host"], label="host NIC priority paused (exact)")]
    ax.legend(handles=[h for h, kind in zip(legend, ("switch", "host")) if kind in kinds],
              loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=8,
              frameon=False, borderaxespad=0.2)
    fig.tight_layout()
    shade_behind(fig, behind)
    return save(fig, path)
