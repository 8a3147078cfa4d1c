"""The time budget of a live run: how much slower than written a scenario
must run for this machine to keep up with it (``time_scale: auto``).

- :mod:`.calibrate`: what one frame costs this machine (a switch pass, an
  agent frame, raw socket I/O), measured once and cached;
- :mod:`.load`: the load a run offers its processes (frames per second at
  each switch and agent), as :func:`emulator.scenario.load.offered_load`
  counts it from a scenario;
- :mod:`.choose`: the bounds that turn a load and those costs into a time
  scale, and the budget results.json records with it.

It knows nothing of scenario files: the scenario loader
(:func:`emulator.scenario.scale.with_choice`) hands it the load and the
fastest link. Whether a run then kept up is :mod:`emulator.fidelity`'s.
"""
