"""The tail every run shares, whichever clock ran it: what it measured
(:class:`RunRecord`) becomes results.json, its CSVs and its plots
(:func:`finish_run`), assembled by :mod:`emulator.measure.results`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from emulator.fidelity.verdict import virtual_fidelity
from emulator.measure.collective_metrics import collective_results
from emulator.measure.job_metrics import job_results
from emulator.measure.results import assemble, check_invariants, write_csvs, write_series_csvs
from emulator.scenario.spec import Scenario


@dataclass
class RunRecord:
    """What a run measured, whichever clock ran it: the input of :func:`finish_run`."""

    scenario: Scenario
    target: str
    out: Path
    flows: list
    qps: list
    plans: list
    agent_stats: dict[str, dict[str, Any] | None]
    counters: dict[str, Any]
    queue_stats: dict[str, Any]
    queue_series: dict[str, Any]
    start_unix: float
    end_unix: float
    partial: bool
    extra: dict[str, Any]
    jobs: list = field(default_factory=list)  # the jobs' plans (emulator.scenario.jobs_plan)


def finish_run(run: RunRecord, say: Callable[[str], None]) -> dict[str, Any]:
    """Assemble results.json, check its invariants, write it with the CSVs
    and the plots into ``run.out``; returns the results."""
    extra = dict(run.extra)
    if run.target == "sim":
        extra.setdefault("fidelity", virtual_fidelity())
    if run.plans:
        extra["collectives"] = collective_results(run.plans, run.qps, run.agent_stats,
                                                  run.start_unix)
    if run.jobs:
        extra["jobs"] = job_results(run.jobs, run.agent_stats, run.start_unix, run.out,
                                    run.scenario.topology,
                                    clock="sim" if run.target == "sim" else "live", say=say)
    results = assemble(run.scenario, run.target, run.flows, run.qps, run.agent_stats,
                       run.counters, run.queue_stats, start_unix=run.start_unix,
                       end_unix=run.end_unix, partial=run.partial, extra=extra)
    check_invariants(results)
    out = run.out
    (out / "results.json").write_text(json.dumps(results, indent=1))
    write_csvs(results, out)
    write_series_csvs(out, run.queue_series, run.qps, run.agent_stats, run.start_unix)
    try:
        from emulator.measure.plots import plot_run
        plot_run(out, title=run.scenario.name, duration_s=run.scenario.duration_s)
    except Exception as exc:  # a plot must not lose the results
        say(f"plots not drawn: {exc}")
    return results
