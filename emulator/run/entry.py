"""The one entry point of a run: :func:`run_scenario` runs a loaded scenario
on the clock its target names (``sim``: the virtual clock, :mod:`.sim`;
``builtin`` or ``bmv2``: live, :mod:`.live`) and returns its results.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from emulator.run.live import run_live
from emulator.run.sim import run_sim
from emulator.scenario.spec import Scenario


def default_out_dir(scenario: Scenario, root: Path = Path("results")) -> Path:
    """``results/<name>-<date>-<time>``: where a run writes when not told."""
    return root / f"{scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_scenario(scenario: Scenario, out_dir: str | Path, target: str | None = None, *,
                 progress: bool = True, log: Callable[[str], None] | None = None,
                 observer: Any = None, comm: Any = None,
                 partition: str | Path = "auto", executor: str = "auto") -> dict[str, Any]:
    """Run ``scenario`` on ``target`` (default: the scenario's own); returns
    the results (also written to ``out_dir``). ``observer``
    (:class:`emulator.view.feed.RunObserver`, the web view) follows the run.
    On sim, ``comm`` (an MPI communicator) runs this process's rank of the
    fabric split by ``partition`` (:mod:`.sim_ranks`); ``executor`` runs
    the switches' P4 code there (:func:`.sim.run_sim`)."""
    target = target or scenario.target
    if target == "sim":
        return run_sim(scenario, out_dir, progress=progress, log=log, observer=observer,
                       comm=comm, partition=partition, executor=executor)
    return run_live(scenario, out_dir, target, progress=progress, log=log, observer=observer)
