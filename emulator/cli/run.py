"""``aifabric run SCENARIO``: run a scenario end to end and write its
results: build the fabric, program it, run the traffic for the scenario's
duration, collect counters and tear down. Live targets (``builtin``,
``bmv2``) need root; ``--target sim`` runs it on the virtual clock in this
process, without root.

``--ranks N`` (sim only) runs it on N MPI ranks on this machine; under a
user's own ``mpiexec -n N ... aifabric run`` every process is one rank
(:mod:`emulator.run.mpi`); ``--partition`` says how the fabric is split.
``--executor`` (sim only) chooses what runs the switches' P4 code: the
same generated code compiled with Cython (``auto``, the default, where it
can be built) or as Python; the results are the same either way.

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
    p.add_argument("--ranks", type=int, metavar="N",
                   help="sim: run on N MPI ranks (mpiexec -n N on this machine); the results "
                        "are the same for every N")
    p.add_argument("--partition", default="auto", metavar="auto|switch|FILE",
                   help="sim on several ranks: how the fabric is split (auto: by pod or leaf "
                        "group, balanced by the scenario's traffic; switch: by switch; or a "
                        "YAML file, rank: [names])")
    p.add_argument("--executor", default="auto", choices=("auto", "cython", "python"),
                   help="sim: what runs the switches' P4 code: cython (compiled once per "
                        "program, then cached), python, or auto (cython where it can be "
                        "built, else python; the results say which)")
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

    if args.executor != "auto" and scenario.target != "sim":
        from emulator.p4.exec.pipeline import EXECUTOR_ENV

        raise ScenarioError(f"--executor {args.executor} is for the virtual clock (--target sim); "
                            f"live switches run the P4 executor ${EXECUTOR_ENV} names "
                            "(python unless it says cython)")
    comm = _mpi_world(args, scenario.target)
    out = Path(args.out) if args.out else default_out_dir(scenario)
    if comm is not None:
        out = Path(comm.bcast(str(out), root=0))  # every rank writes where rank 0 says
    elif args.ranks is not None and args.ranks > 1:
        from emulator.run.mpi import relaunch

        argv = [sys.executable, "-m", "emulator.cli.main", *sys.argv[1:]]
        if not args.out:
            argv += ["--out", str(out)]
        return relaunch(args.ranks, argv)
    lead = comm is None or comm.Get_rank() == 0
    if comm is not None and args.view:
        raise ScenarioError("--view follows a sim run on one rank; run without --ranks, or "
                            "open the results afterwards with aifabric view")
    say = lambda msg: console.print(f"[dim]{msg}[/]")  # noqa: E731
    view = LiveView(args.view, scenario.name, args.view_speed) if args.view else None
    if view is None and args.view_speed is not None:
        raise ScenarioError("--view-speed needs --view")
    try:
        if view is not None:
            view.announce(say)
        try:
            results = run_scenario(scenario, out, progress=not args.no_progress and lead,
                                   log=say if lead else None,
                                   observer=view.feed if view else None, comm=comm,
                                   partition=args.partition, executor=args.executor)
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
        if lead:
            _print_results(console, results, out)
        if view is not None:
            view.linger(args.view_linger, say)
    finally:
        if view is not None:
            view.stop()
    failed = [c for c in results["checks"] if not c["passed"]]
    return 1 if failed or results["partial"] else 0


def _mpi_world(args: argparse.Namespace, target: str) -> Any:
    """This process's MPI communicator when it is one rank of several, else
    None; ``--ranks`` and ``--partition`` checked against the target and the job."""
    from emulator.run.mpi import under_mpi, world

    if args.ranks is not None and args.ranks < 1:
        raise ScenarioError(f"--ranks {args.ranks}: give a number of ranks, 1 or more")
    several = (args.ranks or 1) > 1 or under_mpi()
    if several and target != "sim":
        raise ScenarioError(f"--ranks and mpiexec run the virtual clock only; add --target sim "
                            f"(the scenario's target is {target})")
    comm = world() if under_mpi() else None
    if comm is not None and args.ranks is not None and args.ranks != comm.Get_size():
        raise ScenarioError(f"--ranks {args.ranks} but mpiexec started {comm.Get_size()} ranks; "
                            "give the same number, or leave --ranks out under mpiexec")
    return comm


def _print_results(console: Any, results: dict[str, Any], out: Path) -> None:
    from emulator.measure.summary import summary

    console.print(summary(results))
    for error in results.get("errors", []):
        console.print(f"[yellow]note:[/] {error}")
    console.print(f"results: {out / 'results.json'}")
