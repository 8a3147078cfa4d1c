"""Runs side by side: ``aifabric report DIR [DIR ...]`` writes one HTML file
(self-contained: PNGs inlined as base64 data URIs, CSS in the page, no
external assets) or one markdown file (PNGs referenced by paths relative to
the file) comparing the run directories ``aifabric run`` wrote.

Contents, one column per run:

- the comparison table (:data:`ROWS`): scenario, description and expected
  outcome (from ``scenario.json``), topology, target, duration, partial,
  flows completed / total, max FCT, total goodput (Σ of the flows'
  ``goodput_bps``), drops, ECN marks, CNPs sent, PFC frames sent, paused
  time, retransmits, spine bytes, ECMP imbalance, busiest link and fabric
  link utilisation, expectation checks passed / failed (failed ones named),
  and fidelity: which clock produced the figures and, for a live run,
  whether it kept up (faithful or not, with its p99 lateness, lag given up,
  CPU use and the first reason; runs from before the monitor say "not
  measured").
  A cell that differs from the first run's is marked. With a ``time_scale``
  other than 1 (in results.json, else scenario.json), a time or rate whose
  data-centre twin is in the results (``X_dc_s`` next to ``X_s``,
  ``X_dc_bps`` next to ``X_bps``) shows both;
- a collectives table when any run has ``collectives`` (id, kind, ranks,
  size, time, algorithm and bus bandwidth, kv-handoff latencies;
  data-centre twins as above);
- the plots: every ``*.png`` of the run directories, one section per kind
  (file name; known kinds first, :data:`PLOT_ORDER`), the runs side by side.

:func:`write_report` reads every run before writing anything and writes the
file in one step (a temporary file renamed over it), so a mistake leaves no
half-written report; mistakes raise :class:`ReportError`, one line each.
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from emulator.measure.errors import MeasureError

FORMATS = ("html", "md")
PLOT_ORDER = ("utilisation", "link_heatmap", "queue_depth", "flow_rates", "pauses", "ecn_cnp",
              "buffer")
DASH = "—"


class ReportError(MeasureError):
    """A run directory or output path the report cannot use."""


@dataclass(frozen=True)
class Run:
    """One run directory as the report sees it."""

    path: Path
    label: str  # column heading: the directory's name (its path when names repeat)
    results: Mapping[str, Any]
    scenario: Mapping[str, Any] = field(default_factory=dict)  # {} without scenario.json
    plots: Mapping[str, Path] = field(default_factory=dict)  # kind (file stem) -> PNG

    @property
    def totals(self) -> Mapping[str, Any]:
        return self.results.get("totals") or {}

    @property
    def time_scale(self) -> float:
        scale = self.results.get("time_scale", self.scenario.get("time_scale", 1))
        try:
            return float(scale or 1)
        except (TypeError, ValueError):  # not a number (e.g. an unresolved "auto")
            return 1.0


# -- reading ----------------------------------------------------------------------------

def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not a text file (JSON expected)") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno}, "
                          f"column {exc.colno})") from None


def load_run(directory: str | Path, label: str | None = None) -> Run:
    """Read one run directory: its results.json (required), scenario.json
    (optional) and PNGs."""
    d = Path(directory)
    if not d.is_dir():
        raise ReportError(f"{d}: no such directory (give run directories written by "
                          "aifabric run)")
    results_path = d / "results.json"
    if not results_path.is_file():
        raise ReportError(f"{d}: no results.json, not a run directory (give directories "
                          "written by aifabric run)")
    results = _read_json(results_path)
    if not isinstance(results, dict) or not isinstance(results.get("totals"), dict):
        raise ReportError(f"{results_path}: not the results of aifabric run (no 'totals')")
    scenario: Any = {}
    if (d / "scenario.json").is_file():
        scenario = _read_json(d / "scenario.json")
        if not isinstance(scenario, dict):
            raise ReportError(f"{d / 'scenario.json'}: not a scenario (a JSON object expected)")
    plots = {p.stem: p for p in sorted(d.glob("*.png")) if p.is_file()}
    return Run(d, label or d.name, results, scenario, plots)


def load_runs(directories: Sequence[str | Path]) -> list[Run]:
    """Every run, labelled by its directory's name, or its path where names repeat."""
    names = [Path(d).name for d in directories]
    return [load_run(d, Path(d).name if names.count(Path(d).name) == 1 else str(d))
            for d in directories]


# -- formatting --------------------------------------------------------------------------

def fmt_count(value: Any) -> str:
    return DASH if value is None else f"{value:,}"


def fmt_bytes(value: Any) -> str:
    if value is None:
        return DASH
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value} B"


def fmt_seconds(value: Any) -> str:
    if value is None:
        return DASH
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return "0 s" if value == 0 else f"{value * 1e9:.3g} ns"


def fmt_rate(value: Any) -> str:
    if value is None:
        return DASH
    for scale, unit in ((1e9, "Gb/s"), (1e6, "Mb/s"), (1e3, "kb/s")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} b/s"


def fmt_fraction(value: Any) -> str:
    if value is None:
        return DASH
    return f"{value * 100:.1f} %" if value < 0.1 else f"{value * 100:.0f} %"


def fmt_ratio(value: Any) -> str:
    return DASH if value is None else f"{value:.2f}"


def dc_key(key: str) -> str | None:
    """The data-centre twin of a time or rate key: ``fct_s`` -> ``fct_dc_s``."""
    for suffix in ("_bps", "_s"):
        if key.endswith(suffix) and not key.endswith("_dc" + suffix):
            return f"{key[:-len(suffix)]}_dc{suffix}"
    return None


def with_dc(run: Run, source: Mapping[str, Any], key: str,
            fmt: Callable[[Any], str]) -> str:
    """``source[key]`` formatted, and its data-centre twin when the run is
    time-scaled and the twin is there."""
    text = fmt(source.get(key))
    twin = dc_key(key)
    if run.time_scale != 1 and twin and source.get(twin) is not None:
        text += f" (DC {fmt(source[twin])})"
    return text


# -- the comparison table ----------------------------------------------------------------

def _flows_done(run: Run) -> str:
    t = run.totals
    if t.get("flows") is None:
        return DASH
    return f"{t.get('flows_completed', 0)} / {t['flows']}"


def _goodput(run: Run) -> str:
    flows = run.results.get("flows") or []
    if not flows:
        return DASH
    text = fmt_rate(sum(f.get("goodput_bps") or 0 for f in flows))
    dc = [f.get("goodput_dc_bps") for f in flows]
    if run.time_scale != 1 and any(v is not None for v in dc):
        text += f" (DC {fmt_rate(sum(v or 0 for v in dc))})"
    return text


def _topology(run: Run) -> str:
    topo = run.scenario.get("topology") or {}
    counts = run.results.get("topology") or {}
    name = topo.get("name") or DASH
    if not counts:
        return name
    parts = [_plural(counts.get(key), one, many) for key, one, many in (
        ("gpus", "GPU", "GPUs"), ("leaves", "leaf", "leaves"), ("spines", "spine", "spines"))
        if counts.get(key) is not None]
    return f"{name} ({', '.join(parts)})" if parts else name


def _plural(count: Any, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _checks(run: Run) -> str:
    checks = run.results.get("checks") or []
    if not checks:
        return "none"
    failed = [c for c in checks if not c.get("passed")]
    lines = [f"{len(checks) - len(failed)} passed, {len(failed)} failed"]
    lines += [f"FAIL {c.get('metric')} {c.get('op')} {c.get('value')!r} "
              f"(found {c.get('found')!r})" for c in failed]
    return "\n".join(lines)


def _total(key: str, fmt: Callable[[Any], str]) -> Callable[[Run], str]:
    return lambda run: with_dc(run, run.totals, key, fmt)


def _clock(run: Run) -> str:
    target = run.results.get("target")
    if target == "sim":
        return "virtual time (sim)"
    return DASH if target is None else f"live ({target})"


def _fidelity(run: Run) -> str:
    """Faithful or not, with the figures behind it (live runs)."""
    if run.results.get("target") == "sim":
        return "exact (virtual time)"
    f = run.results.get("fidelity")
    if not f:
        return "not measured"
    figures = (f"p99 late: switches {_us(f.get('switch_late_p99_us'))}, agents "
               f"{_us(f.get('agent_late_p99_us'))} (limit {_us(f.get('limit_us'))}); lag given "
               f"up {f.get('lag_given_up_s', 0):g} s; CPU {fmt_fraction(f.get('cpu_busy'))}")
    if f.get("faithful"):
        return f"faithful\n{figures}"
    reasons = f.get("reasons") or []
    fix = f.get("suggested_time_scale")
    return "\n".join(["NOT FAITHFUL", figures] + reasons[:2]
                     + ([f"try time_scale {fix}"] if fix else []))


def _us(value: Any) -> str:
    return DASH if value is None else f"{value:g} µs"


ROWS: tuple[tuple[str, Callable[[Run], str]], ...] = (
    ("scenario", lambda r: str(r.results.get("scenario") or DASH)),
    ("description", lambda r: str(r.scenario.get("description") or DASH)),
    ("expect", lambda r: str(r.scenario.get("expect") or DASH)),
    ("topology", _topology),
    ("target", lambda r: str(r.results.get("target") or DASH)),
    ("clock", _clock),
    ("fidelity", _fidelity),
    ("duration", lambda r: with_dc(r, r.results, "duration_s", fmt_seconds)),
    ("partial", lambda r: "yes" if r.results.get("partial") else "no"),
    ("flows completed", _flows_done),
    ("max FCT", _total("max_fct_s", fmt_seconds)),
    ("total goodput (Σ flows)", _goodput),
    ("drops", _total("drops", fmt_count)),
    ("ECN marked", _total("ecn_marked", fmt_count)),
    ("CNPs sent", _total("cnp_sent", fmt_count)),
    ("PFC frames sent", _total("pfc_tx", fmt_count)),
    ("paused", _total("paused_s", fmt_seconds)),
    ("retransmits", _total("retransmits", fmt_count)),
    ("spine bytes", _total("spine_bytes", fmt_bytes)),
    ("ECMP imbalance (max/mean)", _total("ecmp_imbalance", fmt_ratio)),
    ("busiest link", _total("max_link_util", fmt_fraction)),
    ("busiest fabric link", _total("max_spine_link_util", fmt_fraction)),
    ("checks", _checks),
)


def comparison_rows(runs: Sequence[Run]) -> list[tuple[str, list[str]]]:
    """``(row label, one cell per run)`` for :data:`ROWS`, plus the time
    scale when any run is time-scaled."""
    rows = [(label, [get(run) for run in runs]) for label, get in ROWS]
    if any(run.time_scale != 1 for run in runs):
        rows.insert(8, ("time scale", [f"{run.time_scale:g}" for run in runs]))
    return rows


COLLECTIVE_COLUMNS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("id", "id", str), ("kind", "kind", str), ("ranks", "ranks", fmt_count),
    ("size", "size_bytes", fmt_bytes), ("time", "time_s", fmt_seconds),
    ("algbw", "algbw_bps", fmt_rate), ("busbw", "busbw_bps", fmt_rate),
    ("latency p50", "latency_p50_s", fmt_seconds), ("latency max", "latency_max_s", fmt_seconds),
)


def collective_rows(runs: Sequence[Run]) -> tuple[list[str], list[list[str]]]:
    """The collectives table: ``(header, rows)``, one row per collective per
    run; no rows when no run has collectives."""
    header = ["run"] + [name for name, _, _ in COLLECTIVE_COLUMNS]
    rows = []
    for run in runs:
        for c in run.results.get("collectives") or []:
            rows.append([run.label] + [DASH if c.get(key) is None else with_dc(run, c, key, fmt)
                                       for _, key, fmt in COLLECTIVE_COLUMNS])
    return header, rows


def plot_kinds(runs: Sequence[Run]) -> list[str]:
    """Every plot kind any run has: :data:`PLOT_ORDER` first, then by name."""
    kinds = {kind for run in runs for kind in run.plots}
    return [k for k in PLOT_ORDER if k in kinds] + sorted(kinds - set(PLOT_ORDER))


# -- HTML --------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em;
       color: #1f2937; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
h3 { font-size: 1em; margin: 1.2em 0 0.4em; color: #374151; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #d1d5db; padding: 0.3em 0.6em; text-align: left;
         vertical-align: top; max-width: 30em; }
th { background: #f3f4f6; } tbody th { font-weight: 600; white-space: nowrap; }
td.diff { background: #fef3c7; } td.bad { color: #b91c1c; font-weight: 600; }
.path { font-weight: normal; color: #6b7280; font-size: 0.85em; }
.plots { display: grid; gap: 0.8em; overflow-x: auto; }
.plots figure { margin: 0; min-width: 420px; }
.plots img { width: 100%; border: 1px solid #e5e7eb; }
.plots figcaption { font-size: 0.85em; color: #6b7280; }
.missing { color: #9ca3af; font-style: italic; padding: 2em 0; }
.note { color: #6b7280; font-size: 0.9em; }
"""


def _esc(text: Any) -> str:
    return html.escape(str(text))


def _data_uri(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror}") from None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _is_bad(label: str, cell: str) -> bool:
    if label == "flows completed" and " / " in cell:
        done, total = cell.split(" / ")
        return done != total
    return ((label == "partial" and cell == "yes")
            or (label == "checks" and "FAIL" in cell)
            or (label == "fidelity" and cell.startswith("NOT FAITHFUL")))


def render_html(runs: Sequence[Run]) -> str:
    """The whole report as one self-contained HTML page."""
    title = "aifabric report: " + ", ".join(run.label for run in runs)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{_esc(title)}</title>", f"<style>{_CSS}</style></head><body>",
           f"<h1>{_esc(title)}</h1>", "<h2>Comparison</h2>"]
    if len(runs) > 1:
        out.append('<p class="note">Highlighted: differs from the first run.</p>')
    out.append("<table><thead><tr><th></th>")
    out += [f'<th>{_esc(run.label)}<br><span class="path">{_esc(run.path)}</span></th>'
            for run in runs]
    out.append("</tr></thead><tbody>")
    for label, cells in comparison_rows(runs):
        out.append(f"<tr><th>{_esc(label)}</th>")
        for i, cell in enumerate(cells):
            classes = [c for c, on in (("diff", i > 0 and cell != cells[0]),
                                       ("bad", _is_bad(label, cell))) if on]
            attr = f' class="{" ".join(classes)}"' if classes else ""
            out.append(f"<td{attr}>{_esc(cell).replace(chr(10), '<br>')}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    header, rows = collective_rows(runs)
    if rows:
        out.append("<h2>Collectives</h2><table><thead><tr>")
        out += [f"<th>{_esc(h)}</th>" for h in header]
        out.append("</tr></thead><tbody>")
        for row in rows:
            out.append("<tr>" + "".join(f"<td>{_esc(cell)}</td>" for cell in row) + "</tr>")
        out.append("</tbody></table>")
    kinds = plot_kinds(runs)
    if kinds:
        out.append("<h2>Plots</h2>")
    for kind in kinds:
        out.append(f"<h3>{_esc(kind)}</h3>")
        out.append(f'<div class="plots" style="grid-template-columns: '
                   f'repeat({len(runs)}, minmax(420px, 1fr))">')
        for run in runs:
            png = run.plots.get(kind)
            body = (f'<img src="{_data_uri(png)}" alt="{_esc(kind)} of {_esc(run.label)}">'
                    if png else f'<div class="missing">no {_esc(kind)}.png</div>')
            out.append(f"<figure>{body}<figcaption>{_esc(run.label)}</figcaption></figure>")
        out.append("</div>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# -- markdown ----------------------------------------------------------------------------

def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", "<br>")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def _md_link(path: Path, base: Path) -> str:
    rel = Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()
    return f"<{rel}>" if any(ch in rel for ch in " ()<>") else rel


def render_markdown(runs: Sequence[Run], base: Path) -> str:
    """The report as markdown; PNG paths are relative to ``base`` (the
    directory the file goes to)."""
    title = "aifabric report: " + ", ".join(run.label for run in runs)
    out = [f"# {title}", "", "## Comparison", ""]
    out += _md_table([""] + [f"{run.label}" for run in runs],
                     [[f"**{label}**"] + cells for label, cells in comparison_rows(runs)])
    out += ["", "Runs: " + "; ".join(f"{run.label} = `{run.path}`" for run in runs)]
    header, rows = collective_rows(runs)
    if rows:
        out += ["", "## Collectives", ""] + _md_table(header, rows)
    kinds = plot_kinds(runs)
    if kinds:
        out += ["", "## Plots"]
    for kind in kinds:
        cells = []
        for run in runs:
            png = run.plots.get(kind)
            cells.append(f"![{kind} of {run.label}]({_md_link(png, base)})" if png
                         else f"*no {kind}.png*")
        out += ["", f"### {kind}", ""] + _md_table([run.label for run in runs], [cells])
    return "\n".join(out) + "\n"


# -- writing -----------------------------------------------------------------------------

def output_path(out: str | Path | None, fmt: str | None) -> tuple[Path, str]:
    """Where the report goes and in which format: ``--format``, else the
    suffix of ``out`` (``.md`` for markdown), else HTML; ``report.html`` (or
    ``report.md``) in the current directory without ``out``."""
    if fmt is not None and fmt not in FORMATS:
        raise ReportError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    if out is None:
        chosen = fmt or "html"
        return Path(f"report.{chosen}"), chosen
    path = Path(out)
    chosen = fmt or ("md" if path.suffix.lower() in (".md", ".markdown") else "html")
    if path.is_dir():
        raise ReportError(f"-o {out}: is a directory; give a file name "
                          f"(e.g. {path / ('report.' + chosen)})")
    parent = path.parent
    if not parent.is_dir():
        raise ReportError(f"-o {out}: directory {parent} does not exist; create it first "
                          "or write elsewhere")
    return path, chosen


def write_report(directories: Sequence[str | Path], out: str | Path | None = None,
                 fmt: str | None = None) -> tuple[Path, list[Run]]:
    """Read the runs, render the report and write it in one step; returns
    where it went and the runs it compares."""
    if not directories:
        raise ReportError("give at least one run directory")
    path, chosen = output_path(out, fmt)
    runs = load_runs(directories)
    text = render_html(runs) if chosen == "html" else render_markdown(runs, path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ReportError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a report is for sharing
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ReportError(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path, runs
