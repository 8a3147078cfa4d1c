"""A quickstart run on sim fed to the web view from a thread: the set-up that
the view's stream test and its browser test share."""

from __future__ import annotations

import threading
from pathlib import Path

from emulator.run.sim import run_sim
from emulator.scenario import load_scenario
from emulator.view.feed import RunState, ViewFeed

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


class FedSimRun:
    """quickstart on sim with a :class:`ViewFeed` as its observer, run on a
    thread by :meth:`start`; :meth:`join` waits for it and its results."""

    def __init__(self, out: Path, name: str, speed: float) -> None:
        self.scenario = load_scenario(QUICKSTART, target_override="sim")
        self.state = RunState(name)
        self.feed = ViewFeed(self.state, speed=speed, min_wall_s=0.0)  # every bin
        self.results: dict | None = None
        self._out = out
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        self.results = run_sim(self.scenario, self._out, progress=False, observer=self.feed)
        self.feed.on_end(self.results)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join()
