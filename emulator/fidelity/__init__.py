"""How faithfully a live run kept to its own schedule: the measuring pieces
every live process shares (switches, NIC agents), and the verdict a run
draws from them.

A leaf package like :mod:`emulator.topology`: it imports nothing else of
the project, so the built-in target and the NIC agent can both use it
without depending on each other or on anything above them.

- :mod:`.lateness`: a cheap log-linear histogram of lateness (µs) with
  percentiles, merging and a JSON form; :class:`~.lateness.BehindSeries`,
  per time bin, how many departures were late beyond a frame time and how
  much lag was given up.
- :mod:`.process`: process settings that keep a live process on time
  (timer slack, real-time priority while light).
- :mod:`.cpu`: the machine's CPU use (busy, steal) sampled while a live
  run's traffic runs.
- :mod:`.verdict`: did the run keep up? The ``fidelity`` block of
  results.json, ``behind.csv``, and the summary's lines.

How much slower a run must go to keep up is :mod:`emulator.budget`'s.
"""

from emulator.fidelity.lateness import (
    REFERENCE_FRAME_BYTES, BehindSeries, LatenessHistogram, frame_time_us, merge_histograms,
)

__all__ = ["REFERENCE_FRAME_BYTES", "BehindSeries", "LatenessHistogram", "frame_time_us",
           "merge_histograms"]
