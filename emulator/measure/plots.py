"""Plots of one run, drawn from its time-series CSVs (matplotlib, Agg).

- ``queue_depth.png`` from ``queues.csv``: the depth (KB) over time of the
  :data:`TOP_QUEUES` most congested (switch, port, priority) queues (largest
  peak depth first), and below it, when any queue was paused by PFC, one
  timeline per queue with its pause intervals shaded.
- ``flow_rates.png``: on top, each flow's measured throughput over time
  (payload its receiver accepted per bin of ``series.csv``); below, from
  ``rates.csv``, its DCQCN current rate Rc (Gb/s or Mb/s), one step line per
  queue pair (a rate holds until the next sample), ending with a dot when
  the flow completed (``start_s + fct_s`` of results.json's flows).
- ``pauses.png`` and ``ecn_cnp.png``: :mod:`.congestion_plots`.
- ``buffer.png``: :mod:`.buffer_plot` (only in a run directory that has a
  ``buffer.csv``: older runs have none).

:func:`plot_run` draws them all into a run directory (the runner calls it
after every run, also partial ones); a CSV that is missing or empty gives a
plot that says so. Times are seconds since the run's common start. The
spans of ``behind.csv`` (where a live run's host fell behind) are shaded
red on every timeline (:mod:`.behind`).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from emulator.measure.behind import read_behind, shade_behind  # noqa: E402
from emulator.measure.congestion_plots import (  # noqa: E402
    draw_goodput, empty, flow_colors, plot_ecn_cnp, plot_pauses,
)

TOP_QUEUES = 6
MAX_RATE_LINES = 16
DEFAULT_INTERVAL_S = 0.01
QueueKey = tuple[str, int, int]


def read_csv(path: str | Path) -> list[dict[str, str]]:
    p = Path(path)
    if not p.exists():
        return []
    with open(p, newline="") as f:
        return list(csv.DictReader(f))


def queue_series(rows: Iterable[dict[str, Any]]) -> dict[QueueKey, list[tuple[float, int, int, bool]]]:
    """``queues.csv`` rows → {(switch, port, priority): [(t_s, packets, bytes, paused)]}, by time."""
    out: dict[QueueKey, list[tuple[float, int, int, bool]]] = {}
    for r in rows:
        key = (str(r["switch"]), int(r["port"]), int(r["priority"]))
        out.setdefault(key, []).append((float(r["t_s"]), int(r["depth_packets"]),
                                        int(r["depth_bytes"]), bool(int(r["paused"]))))
    for samples in out.values():
        samples.sort()
    return out


def top_queues(series: dict[QueueKey, list], n: int = TOP_QUEUES) -> list[QueueKey]:
    """The ``n`` queues with the largest peak depth (bytes), ties by paused samples."""
    def score(key: QueueKey) -> tuple[int, int]:
        samples = series[key]
        return max(s[2] for s in samples), sum(s[3] for s in samples)
    ranked = sorted((k for k in series if score(k) != (0, 0)), key=score, reverse=True)
    return ranked[:n]


def pause_intervals(samples: Sequence[tuple[float, int, int, bool]],
                    interval_s: float | None = None) -> list[tuple[float, float]]:
    """Merged ``(start, end)`` spans during which the queue was paused, as
    ``pauses.csv`` has them (:func:`~.run_series.sampled_pause_intervals`)."""
    from emulator.measure.run_series import sampled_pause_intervals

    return sampled_pause_intervals(samples, interval_s or _interval(samples))


def sample_interval(rows: Iterable[dict[str, Any]]) -> float | None:
    """The switches' queue sampling interval in ``queues.csv`` rows (the
    shortest gap between one queue's samples), None without two samples."""
    gaps = [_interval(s) for s in queue_series(rows).values() if len(s) > 1]
    return min(gaps) if gaps else None


def _interval(samples: Sequence[tuple]) -> float:
    gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:]) if b[0] - a[0] > 1e-6]
    return min(gaps) if gaps else DEFAULT_INTERVAL_S


def _label(key: QueueKey) -> str:
    switch, port, prio = key
    return f"{switch} port {port} prio {prio}"


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes,
            fontsize=12, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def plot_queue_depth(rows: Iterable[dict[str, Any]], path: str | Path, *, title: str = "",
                     top: int = TOP_QUEUES, duration_s: float | None = None,
                     behind: Sequence[tuple[float, float]] = ()) -> Path:
    """Draw ``queue_depth.png`` (see the module docstring) from ``queues.csv`` rows."""
    series = queue_series(rows)
    keys = top_queues(series, top)
    paused_keys = [k for k in keys if any(s[3] for s in series[k])]
    heading = "Switch queue depth" + (f": {title}" if title else "")
    if paused_keys:
        fig, (ax, axp) = plt.subplots(
            2, 1, figsize=(11, 6.5), sharex=True,
            gridspec_kw={"height_ratios": [3, max(1.0, 0.35 * len(paused_keys))]})
    else:
        fig, ax = plt.subplots(figsize=(11, 5))
        axp = None
    if not keys:
        _empty(ax, "no queue built up (queues.csv has no samples)")
        ax.set_title(heading)
    else:
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        color = {k: colors[i % len(colors)] for i, k in enumerate(keys)}
        for k in keys:
            s = series[k]
            times = [x[0] for x in s]
            kb = [x[2] / 1000 for x in s]
            peak = max(s, key=lambda x: x[2])
            ax.step(times, kb, where="post", color=color[k], lw=1.5,
                    label=f"{_label(k)} (peak {peak[2] / 1000:.3g} KB, {peak[1]} pkts)")
        ax.set_ylabel("queue depth (KB)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8, framealpha=0.85)
        others = len(series) - len(keys)
        ax.set_title(heading + (f"  (top {len(keys)} of {len(series)} active queues)"
                                if others > 0 else ""))
        if axp is not None:
            for i, k in enumerate(paused_keys):
                spans = pause_intervals(series[k])
                axp.broken_barh([(a, b - a) for a, b in spans], (i - 0.35, 0.7),
                                color=color[k], alpha=0.75)
                total = sum(b - a for a, b in spans)
                axp.text(1.002, i, f"{total * 1000:.0f} ms", va="center", fontsize=8,
                         transform=axp.get_yaxis_transform())
            axp.set_yticks(range(len(paused_keys)))
            axp.set_yticklabels([_label(k) for k in paused_keys], fontsize=8)
            axp.set_ylim(len(paused_keys) - 0.5, -0.5)
            axp.set_title("PFC pause intervals (queue not allowed to transmit)", fontsize=10)
            axp.grid(True, axis="x", alpha=0.3)
            axp.set_xlabel("time since run start (s)")
        else:
            ax.set_xlabel("time since run start (s)")
        if duration_s:
            ax.set_xlim(left=min(0.0, min(series[k][0][0] for k in keys)),
                        right=max(duration_s, max(series[k][-1][0] for k in keys)))
    fig.tight_layout()
    shade_behind(fig, behind)
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def rate_series(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """``rates.csv`` rows → {(flow, qp): [(t_s, Rc bps)]}, by time."""
    out: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for r in rows:
        out.setdefault((str(r["flow"]), int(r["qp"])), []).append(
            (float(r["t_s"]), float(r["rate_bps"])))
    for samples in out.values():
        samples.sort()
    return out


def rate_lines_shown(series: dict[tuple[str, int], list[tuple[float, float]]],
                     flow_order: Sequence[str], n: int = MAX_RATE_LINES) -> list[tuple[str, int]]:
    """The ``n`` queue pairs whose rate DCQCN cut deepest (lowest Rc against
    their first Rc; ties by flow order), listed in flow order then QP."""
    order = {f: i for i, f in enumerate(dict.fromkeys(flow_order))}

    def natural(key: tuple[str, int]) -> tuple[int, str, int]:
        return order.get(key[0], len(order)), key[0], key[1]

    def depth(key: tuple[str, int]) -> float:
        first = series[key][0][1]
        return min(r for _, r in series[key]) / first if first > 0 else 1.0

    chosen = sorted(series, key=lambda k: (depth(k), natural(k)))[:n]
    return sorted(chosen, key=natural)


def plot_flow_rates(rows: Iterable[dict[str, Any]], path: str | Path, *, title: str = "",
                    duration_s: float | None = None,
                    series_rows: Sequence[dict[str, Any]] | None = None,
                    flows: Sequence[dict[str, Any]] = (),
                    series_missing: str = "no series.csv: throughput not measured",
                    behind: Sequence[tuple[float, float]] = ()) -> Path:
    """Draw ``flow_rates.png`` (see the module docstring) from ``rates.csv``
    rows, ``series.csv`` rows and the ``flows`` of results.json."""
    series = rate_series(rows)
    fig, (ax_gp, ax) = plt.subplots(2, 1, figsize=(11, 7.5 if series else 6), sharex=True,
                                    gridspec_kw={"height_ratios": [1, 1] if series else [2, 1]})
    fig.suptitle("Flow throughput and DCQCN rate" + (f": {title}" if title else ""))
    names = [f["id"] for f in flows] + sorted({f for f, _ in series}) + sorted(
        {str(r["flow"]) for r in series_rows or ()})
    colors = flow_colors(names)
    drew = draw_goodput(ax_gp, series_rows or [], colors,
                        series_missing if series_rows is None else
                        "no payload received (series.csv is empty)")
    if drew:
        ax_gp.legend(loc="upper right", fontsize=8, framealpha=0.85,
                     ncol=1 if len(ax_gp.get_legend_handles_labels()[0]) <= 8 else 2)
    done = {f["id"]: f["start_s"] + f["fct_s"] for f in flows
            if f.get("fct_s") is not None and f.get("start_s") is not None}
    heading = "DCQCN sending rate Rc per queue pair (until its flow completed)"
    end = max([s[-1][0] for s in series.values()] + [duration_s or 0.0])
    if not series:
        empty(ax, "no rate samples (rates.csv is empty: DCQCN off or no traffic)")
        ax.set_title(heading, fontsize=10)
    else:
        flow_names = sorted({f for f, _ in series})
        multi = len(series) > len(flow_names)
        top = max(r for s in series.values() for _, r in s)
        scale, unit = (1e9, "Gb/s") if top >= 1e9 else (1e6, "Mb/s")
        keys = sorted(series)
        shown = rate_lines_shown(series, names)
        for key in shown:
            stop = done.get(key[0], end)
            s = [(t, r) for t, r in series[key] if t <= stop] or series[key][:1]
            times = [t for t, _ in s] + [max(stop, s[-1][0])]
            values = [r / scale for _, r in s] + [s[-1][1] / scale]
            ax.step(times, values, where="post", lw=1.4, color=colors.get(key[0]),
                    label=f"{key[0]} (qp {key[1]})" if multi else key[0])
            if key[0] in done:
                ax.plot(times[-1:], values[-1:], "o", ms=6, color=colors.get(key[0]),
                        mec="white", mew=0.8, zorder=5)
        ax.set_ylabel(f"current rate Rc ({unit})")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ncol = 1 if len(shown) <= 8 else 2
        ax.legend(loc="upper right", fontsize=8, ncol=ncol, framealpha=0.85)
        extra = f"  ({len(shown)} of {len(keys)} queue pairs: those DCQCN cut deepest)" \
            if len(shown) < len(keys) else ""
        ax.set_title(heading + extra + ("; \u25cf = flow completed" if done else ""),
                     fontsize=10)
    ax.set_xlabel("time since run start (s)")
    if end > 0:
        ax.set_xlim(left=0.0, right=end)
    fig.tight_layout()
    shade_behind(fig, behind)
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_run(out_dir: str | Path, *, title: str = "",
             duration_s: float | None = None) -> list[Path]:
    """Draw ``queue_depth.png``, ``flow_rates.png``, ``pauses.png``,
    ``ecn_cnp.png`` and (where the run wrote ``buffer.csv``) ``buffer.png``
    into ``out_dir`` from its CSVs and ``results.json``, then
    ``utilisation.png`` (and, for a fabric drawn as blocks,
    ``link_heatmap.png``) from its ``results.json``
    (:mod:`emulator.measure.utilisation_plot`). A time-scaled run's titles
    say what one emulated second is in the data centre."""
    from emulator.measure.buffer_plot import plot_buffer
    from emulator.measure.utilisation_plot import plot_utilisation

    d = Path(out_dir)
    scale = _time_scale(d)
    if scale != 1:  # times on the axes are emulated; say what they are in the data centre
        title = f"{title} (time scale {scale:g}: 1 s here = {1e6 / scale:.4g} µs in the DC)"
    series = read_csv(d / "series.csv") if (d / "series.csv").exists() else None
    no_series = "no series.csv in the run directory (the run stopped before it was written)"
    no_pauses = "no pauses.csv in the run directory (the run stopped before it was written)"
    behind = read_behind(d)
    queues = read_csv(d / "queues.csv")
    return [
        plot_queue_depth(queues, d / "queue_depth.png", title=title,
                         duration_s=duration_s, behind=behind),
        plot_flow_rates(read_csv(d / "rates.csv"), d / "flow_rates.png", title=title,
                        duration_s=duration_s, series_rows=series, flows=_flows(d),
                        series_missing=no_series, behind=behind),
        plot_pauses(read_csv(d / "pauses.csv"), d / "pauses.png", title=title,
                    duration_s=duration_s, switch_sample_s=sample_interval(queues),
                    missing=None if (d / "pauses.csv").exists() else no_pauses, behind=behind),
        plot_ecn_cnp(series or [], d / "ecn_cnp.png", title=title, duration_s=duration_s,
                     missing=None if series is not None else no_series, behind=behind),
    ] + ([plot_buffer(read_csv(d / "buffer.csv"), read_csv(d / "priority_groups.csv"),
                      d / "buffer.png", title=title, duration_s=duration_s, behind=behind)]
         if (d / "buffer.csv").exists() else []) \
        + plot_utilisation(d, title=title)


def _time_scale(out_dir: Path) -> float:
    """The run's ``time_scale`` (1 when results.json is missing or has none)."""
    try:
        return float(json.loads((out_dir / "results.json").read_text()).get("time_scale") or 1)
    except (OSError, ValueError, AttributeError, TypeError):
        return 1.0


def _flows(out_dir: Path) -> list[dict[str, Any]]:
    """The ``flows`` of the run's results.json ([] when it is missing or unreadable)."""
    try:
        return list(json.loads((out_dir / "results.json").read_text()).get("flows") or [])
    except (OSError, ValueError, AttributeError):
        return []
