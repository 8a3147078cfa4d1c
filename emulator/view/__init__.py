"""Watching a fabric: a web page and Prometheus metrics, live or replayed.

- :mod:`.picture`: the topology as the page draws it (positions from
  :mod:`emulator.topology.layout`, one edge per link direction);
- :mod:`.frames`: cumulative readings of a run -> frames (what changed over
  each sampling interval) and totals;
- :mod:`.feed`: the publisher a run calls (:class:`~.feed.RunObserver`,
  never blocking it) and the state the server reads;
- :mod:`.sources`: what a sim or live run hands the feed each sample;
- :mod:`.replay`: a finished run's frames, rebuilt from its CSVs;
- :mod:`.metrics`: ``/metrics`` in the Prometheus text format;
- :mod:`.server`: Starlette + uvicorn in a thread: the page, its event
  stream (Server-Sent Events) and ``/metrics``;
- ``static/``: the page (``index.html``, ``view.js``, ``view.css``) and the
  vendored Cytoscape.js and uPlot releases with their licenses.
"""
