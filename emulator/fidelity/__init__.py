"""How faithfully a live run kept to its own schedule: the measuring pieces
every live process shares (switches, NIC agents), imported by the layers
that measure and by those that judge.

A leaf package like :mod:`emulator.topology`: it imports nothing else of
the project, so the built-in target and the NIC agent can both use it
without depending on each other or on anything above them.

- :mod:`.lateness`: a cheap log-linear histogram of lateness (µs) with
  percentiles, merging and a JSON form; :class:`~.lateness.BehindSeries`,
  per time bin, how many departures were late beyond a frame time and how
  much lag was given up.
- :mod:`.process`: process settings that keep a live process on time
  (timer slack).
"""

from emulator.fidelity.lateness import (
    REFERENCE_FRAME_BYTES, BehindSeries, LatenessHistogram, frame_time_us, merge_histograms,
)

__all__ = ["REFERENCE_FRAME_BYTES", "BehindSeries", "LatenessHistogram", "frame_time_us",
           "merge_histograms"]
