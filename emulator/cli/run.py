"""``aifabric run SCENARIO``: run a scenario end to end and write its
results: build the fabric, program it, run the traffic for the scenario's
duration, collect counters and tear down. Live targets (``builtin``,
``bmv2``) need root; ``--target sim`` runs it on the virtual clock in this
process, without root.

Results go to ``--out`` (default ``results/<scenario>-<timestamp>/``):
``results.json``, ``flows.csv``, ``ports.csv``, the agents' configs and
stats. Exit status 0, or 1 when an ``expect_check`` fails (or the run was
interrupted); scenario errors exit 2 before anything starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from emulator.cli.view import LiveView, add_view_options
from emulator.scenario.errors import ScenarioError
from emulator.scenario.schema import TARGETS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="run a scenario and write its results",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (scenarios/*.yaml)")
    p.add_argument("--target", choices=TARGETS, help="target instead of the file's: builtin, bmv2 (live) or sim (virtual time)")
    p.add_argument("--time-scale", metavar="auto|N",
                   help="time scale instead of the file's: a number >= 1, or auto (the least "
                        "slowdown at which this machine keeps up with the scenario's load)")
    p.add_argument("--out", help="results directory (default results/<name>-<timestamp>/)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_view_options(p)
    p.set_defaults(func=_run)


def parse_time_scale(text: str | None) -> float | str | None:
    """``--time-scale``: None, ``auto`` or a number >= 1 (a whole number as int)."""
    if text is None:
        return None
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 1 or value == float("inf"):
        raise ScenarioError(f"--time-scale {text!r}: give a number >= 1 or auto")
    return int(value) if value.is_integer() else value


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from emulator.scenario import load_scenario
    from emulator.run import default_out_dir, run_scenario

    console = Console()
    scenario = load_scenario(args.scenario, target_override=args.target,
                             time_scale_override=parse_time_scale(args.time_scale))
    from emulator.run.agent_process import AgentStartError

    out = Path(args.out) if args.out else default_out_dir(scenario)
    say = lambda msg: console.print(f"[dim]{msg}[/]")  # noqa: E731
    view = LiveView(args.view, scenario.name, args.view_speed) if args.view else None
    if view is None and args.view_speed is not None:
        raise ScenarioError("--view-speed needs --view")
    try:
        if view is not None:
            view.announce(say)
        try:
            results = run_scenario(scenario, out, progress=not args.no_progress, log=say,
                                   observer=view.feed if view else None)
        except AgentStartError as exc:  # the fabric is down again; say why in one line
            print(f"aifabric: {exc}", file=sys.stderr)
            if view is not None:
                view.finish(error=str(exc))
                view.linger(args.view_linger, say)
            return 1
        except BaseException as exc:  # the page says the run ended; the CLI says why
            if view is not None:
                view.finish(error=str(exc) or type(exc).__name__)
            raise
        if view is not None:
            view.finish(results)
        _print_results(console, results, out)
        if view is not None:
            view.linger(args.view_linger, say)
    finally:
        if view is not None:
            view.stop()
    failed = [c for c in results["checks"] if not c["passed"]]
    return 1 if failed or results["partial"] else 0


def _print_results(console: Any, results: dict[str, Any], out: Path) -> None:
    from emulator.measure.summary import summary

    console.print(summary(results))
    for error in results.get("errors", []):
        console.print(f"[yellow]note:[/] {error}")
    console.print(f"results: {out / 'results.json'}")
