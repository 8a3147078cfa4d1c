"""A scenario executed on a clock: the live run (Mininet, switch and agent
processes, wall clock) and the run on the virtual clock (one process,
simulated time), and what both share.

- :mod:`.entry`: :func:`run_scenario`, the one entry point, which dispatches
  on the target;
- :mod:`.live`: the live runner; :mod:`.session`: a fabric brought up and
  programmed (also ``aifabric up``); :mod:`.agent_process`: the NIC agents'
  processes; :mod:`.gpu_capture`: tcpdump at a GPU's NIC;
- :mod:`.sim`: the runner on the virtual clock (:mod:`emulator.sim`);
- shared by both: :mod:`.qps` (the queue-pair plan), :mod:`.agent_config`
  (the agents' configs), :mod:`.feeder` (fed flows), :mod:`.events` (buffer
  overrides, timed events and storms through one interface),
  :mod:`.captures` (pcaps), :mod:`.record` (the run record and its tail:
  results.json, CSVs and plots through :mod:`emulator.measure`).

The scenario itself comes from :mod:`emulator.scenario` (the file); the
time scale of a live run from :mod:`emulator.budget`; whether it kept up
from :mod:`emulator.fidelity`.
"""

from emulator.run.entry import default_out_dir, run_scenario

__all__ = ["default_out_dir", "run_scenario"]
