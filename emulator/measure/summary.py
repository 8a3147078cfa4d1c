"""The summary ``aifabric run`` prints: rich tables of a run's results.

- **flows**: id, endpoints, bytes, FCT (or "not done"), goodput,
  retransmits, CNPs received (with the data-centre FCT and goodput when the scenario has a
  ``time_scale``). At most :data:`MAX_FLOW_ROWS` rows: with more flows the
  incomplete ones come first, then the slowest, and the caption says how
  many are in ``flows.csv``;
- **totals**: drops, marks, CNPs, PFC, pauses and how far they spread,
  retransmits, spine bytes, ECMP imbalance, busiest link;
- **collectives** when there are any: time, algbw, busbw, kv-handoff
  latencies (and data-centre time and busbw when time-scaled);
- **jobs** when there are any: iterations done, iteration time, compute,
  exposed communication by kind; TTFT, TPOT and KV share for inference;
- **checks**: each expectation, what was found, pass or FAIL;
- **fidelity** (live runs): whether the run kept up (:mod:`emulator.fidelity.verdict`),
  its lateness figures, and, when it did not, a red warning naming the
  cause and a ``time_scale`` that would do.

Built to stay readable in an 80-column terminal: endpoints and ids do not
wrap, sizes are short (``1.5MB``), times in ms.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from emulator.scenario.units import format_size

MAX_FLOW_ROWS = 12
TOTAL_KEYS = ("drops", "ecn_marked", "cnp_sent", "pfc_tx", "pfc_rx", "paused_s",
              "paused_ports", "paused_hosts", "retransmits", "spine_bytes", "ecmp_imbalance",
              "max_link_util")


class Units:
    """How a run's times and rates read best: ms and Mb/s for emulated
    runs, µs and Gb/s for short, fast ones (data-centre rates on sim)."""

    def __init__(self, results: Mapping[str, Any]) -> None:
        short = results.get("duration_s", 1.0) < 0.05
        rates = [f.get("goodput_bps") or 0.0 for f in results.get("flows", ())]
        rates += [c.get("busbw_bps") or 0.0 for c in results.get("collectives") or ()]
        fast = max(rates, default=0.0) >= 5e9
        self.time, self.time_k = ("µs", 1e6) if short else ("ms", 1e3)
        self.rate, self.rate_k = ("Gb/s", 1e-9) if fast else ("Mb/s", 1e-6)

    def t(self, value: float | None) -> str:
        return "" if value is None else f"{value * self.time_k:.1f}"

    def r(self, value: float | None) -> str:
        return "" if value is None else f"{value * self.rate_k:.2f}"


def summary(results: Mapping[str, Any]) -> Any:
    """A rich renderable: flows, totals, collectives and checks."""
    from rich.console import Group

    parts: list[Any] = [flows_table(results), totals_table(results)]
    if results.get("collectives"):
        parts.append(collectives_table(results["collectives"], results.get("time_scale", 1),
                                       Units(results)))
    if results.get("jobs"):
        parts.append(jobs_table(results["jobs"], Units(results)))
    if results.get("checks"):
        parts.append(checks_table(results["checks"]))
    if results.get("fidelity") and results.get("target") != "sim":
        parts.extend(fidelity_parts(results))
    return Group(*parts)


def fidelity_parts(results: Mapping[str, Any]) -> list[Any]:
    """The fidelity table and, for a run that did not keep up, the warning."""
    from rich.panel import Panel
    from rich.table import Table

    from emulator.fidelity.verdict import fix_line

    f = results["fidelity"]
    table = Table(title="fidelity (live clock)", show_header=False)
    verdict = "[green]yes[/]" if f.get("faithful") else "[bold red]NO[/]"
    rows = [("faithful", verdict),
            ("switch lateness p99 / max", _pair_us(f.get("switch_late_p99_us"),
                                                   f.get("switch_late_max_us"))),
            ("switch receive wait p99", _pair_us(f.get("switch_rx_wait_p99_us"), None)),
            ("agent lateness p99 / max", _pair_us(f.get("agent_late_p99_us"),
                                                  f.get("agent_late_max_us"))),
            ("limit (1500 B frame time)", _pair_us(f.get("limit_us"), None)),
            ("lag given up", f"{f.get('lag_given_up_s', 0):g} s"),
            ("receive overruns", str(f.get("rx_overruns", "n/a"))),
            ("CPU busy (mean / max)", f"{_pct(f.get('cpu_busy'))} / {_pct(f.get('cpu_busy_max'))}"
                                      f" of {f.get('cores', '?')} cores")]
    if f.get("headroom_overflows"):
        rows.insert(-1, ("lossless frames past headroom", str(f["headroom_overflows"])))
    if f.get("rx_ring_holes"):
        rows.insert(-1, ("receive ring slots skipped", f"{f['rx_ring_holes']} (a frame behind each "
                                                       "waited 1 ms)"))
    if f.get("cpu_steal") is not None:
        rows.append(("CPU the host took (steal)",
                     f"{100 * f['cpu_steal']:.1f} % / {100 * (f.get('cpu_steal_max') or 0):.1f} %"))
    choice = results.get("time_scale_choice")
    if choice:
        rows.append(("time scale", describe_choice(choice)))
    for key, value in rows:
        table.add_row(key, value)
    parts: list[Any] = [table]
    if not f.get("faithful"):
        reasons = "\n".join(f"- {r}" for r in f.get("reasons", []))
        auto = (results.get("time_scale_choice") or {}).get("mode") == "auto"
        fix = fix_line(f, results.get("time_scale", 1), auto) or ""
        parts.append(Panel(f"{reasons}\n\n{fix}", title="[bold red]not faithful[/]",
                           border_style="red"))
    return parts


def describe_choice(choice: Mapping[str, Any]) -> str:
    """``auto: 20 (peak 41,000 frames/s at leaf-r0-0 ...)`` or ``fixed: 4000``."""
    if choice.get("mode") != "auto":
        return f"{choice.get('mode', 'fixed')}: {choice.get('time_scale', 1):g}"
    budget = choice.get("budget") or {}
    busiest = budget.get("busiest") or "?"
    return (f"auto: {choice.get('time_scale', 1):g} (busiest {busiest}: "
            f"{budget.get('busiest_pps', 0):,.0f} frames/s written, "
            f"{budget.get('cost_us', 0):.0f} µs each here)")


def _pair_us(a: Any, b: Any) -> str:
    if a is None:
        return "n/a"
    return f"{a:g} µs" if b is None else f"{a:g} / {b:g} µs"


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.0f} %"


def shown_flows(flows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """All flows in order, or, past :data:`MAX_FLOW_ROWS`, the incomplete and
    then the slowest ones."""
    if len(flows) <= MAX_FLOW_ROWS:
        return list(flows)
    ranked = sorted(flows, key=lambda f: (f["completed"], -(f["fct_s"] or 0.0)))
    return ranked[:MAX_FLOW_ROWS]


def flows_table(results: Mapping[str, Any]) -> Any:
    from rich.table import Table

    k = results.get("time_scale", 1)
    dc = k != 1
    u = Units(results)
    flows = results["flows"]
    shown = shown_flows(flows)
    clock = ", virtual time" if results.get("target") == "sim" else ""
    title = (f"{results['scenario']} ({results['target']}{clock}, "
             f"{u.t(results['duration_s'])} {u.time}"
             + (f" = {results['duration_dc_s'] * 1e6:.4g} µs in the data centre, "
                f"time scale {k:g}" if dc else "")
             + f"{', PARTIAL' if results['partial'] else ''})")
    caption = (f"{len(shown)} of {len(flows)} flows: the incomplete, then the slowest; "
               "all in flows.csv" if len(shown) < len(flows) else None)
    table = Table(title=title, caption=caption)
    columns = ["flow", "src→dst", "bytes", f"FCT {u.time}", u.rate]
    columns += ["DC FCT µs", "DC Gb/s"] if dc else []
    for col in columns + ["retx", "CNPs"]:
        table.add_column(col, justify="left" if col in ("flow", "src→dst") else "right",
                         no_wrap=True)
    for f in shown:
        cells = [f["id"], f"{f['src']}→{f['dst']}", format_size(f["bytes"]),
                 u.t(f["fct_s"]) if f["completed"] else "[red]not done[/]",
                 u.r(f["goodput_bps"])]
        if dc:
            cells += ["" if f.get("fct_dc_s") is None else f"{f['fct_dc_s'] * 1e6:.1f}",
                      f"{(f.get('goodput_dc_bps') or 0) / 1e9:.1f}"]
        table.add_row(*cells, str(f["retransmits"]), str(f["cnp_received"]))
    return table


def totals_table(results: Mapping[str, Any]) -> Any:
    from rich.table import Table

    t = results["totals"]
    table = Table(title="totals", show_header=False)
    keys = TOTAL_KEYS + (("max_fct_dc_s", "paused_dc_s") if results.get("time_scale", 1) != 1
                         else ())
    for key in keys:
        if key in t:
            value = t[key]
            table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    return table


def collectives_table(collectives: Sequence[Mapping[str, Any]], time_scale: float = 1,
                      units: Units | None = None) -> Any:
    """Time, algbw, busbw and kv-handoff latencies of each collective."""
    from rich.table import Table

    u = units or Units({"collectives": collectives})
    dc = time_scale != 1
    table = Table(title=f"collectives (times in {u.time}, bandwidths in {u.rate}"
                        + (", DC: data-centre µs and Gb/s" if dc else "") + ")")
    columns = ["id", "kind", "ranks", "size", "time", "algbw", "busbw", "p50", "max"]
    columns += ["DC time", "DC busbw"] if dc else []
    for col in columns:
        table.add_column(col, justify="left" if col in ("id", "kind") else "right",
                         no_wrap=col in ("id", "kind"))
    for c in collectives:
        cells = [c["id"], c["kind"] + (" PXN" if c.get("pxn") else ""), str(c["ranks"]),
                 format_size(c["size_bytes"]),
                 u.t(c["time_s"]) if c["completed"] else "[red]not done[/]",
                 u.r(c["algbw_bps"]), u.r(c["busbw_bps"]),
                 u.t(c.get("latency_p50_s")), u.t(c.get("latency_max_s"))]
        if dc:
            time_dc, busbw_dc = c.get("time_dc_s"), c.get("busbw_dc_bps")
            cells += ["" if time_dc is None else f"{time_dc * 1e6:.1f}",
                      "" if busbw_dc is None else f"{busbw_dc / 1e9:.1f}"]
        table.add_row(*cells)
    return table


def jobs_table(jobs: Sequence[Mapping[str, Any]], units: Units | None = None) -> Any:
    """Per job: iterations done, iteration time (mean, p99), compute and exposed
    communication by kind; for inference TTFT, TPOT, the KV share of TTFT and the
    caches offloaded to storage."""
    from rich.table import Table

    u = units or Units({})
    table = Table(title=f"jobs (times in {u.time}; inference: TTFT p50/p99, TPOT, KV share)")
    for col in ("id", "kind", "ranks", "done", "iteration", "p99", "compute", "exposed"):
        table.add_column(col, justify="left" if col in ("id", "kind", "exposed") else "right",
                         no_wrap=col in ("id", "kind"))
    for j in jobs:
        if "error" in j:
            table.add_row(j["id"], "", "", "[red]error[/]", "", "", "", j["error"])
            continue
        done = f"{j['iterations_done']}/{j['iterations_planned']}"
        if not j["completed"]:
            done = f"[red]{done}[/]"
        serving = j.get("serving")
        if serving:
            share = serving.get("kv_share_of_ttft")
            offloaded = (serving.get("kv_offload") or {}).get("offloaded")
            note = "" if share is None else f"KV {share:.0%} of TTFT"
            if serving.get("mode") == "colocated":
                note = "colocated"  # no KV hand-off: the share is 0 by design
            if offloaded:
                note += f", {offloaded} offloaded to storage"
            table.add_row(j["id"], j["kind"], str(j["ranks"]),
                          f"{serving['completed']}/{serving['requests']}",
                          u.t(serving["ttft_p50_s"]), u.t(serving["ttft_p99_s"]),
                          u.t(serving["tpot_mean_s"]), note)
            continue
        exposed = " ".join(f"{k.upper()} {u.t(v)}" for k, v in
                           (j.get("exposed_mean_s") or {}).items() if v)
        table.add_row(j["id"], j["kind"], str(j["ranks"]), done, u.t(j["iteration_mean_s"]),
                      u.t(j["iteration_p99_s"]), u.t(j["compute_mean_s"]), exposed or "none")
    return table


def checks_table(checks: Sequence[Mapping[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="checks")
    for col in ("check", "found", "result"):
        table.add_column(col)
    for c in checks:
        table.add_row(f"{c['metric']} {c['op']} {c['value']!r}", repr(c["found"]),
                      "[green]pass[/]" if c["passed"] else "[red]FAIL[/]")
    return table
