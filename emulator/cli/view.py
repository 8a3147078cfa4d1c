"""``aifabric view RESULTS_DIR [RESULTS_DIR ...]``: the web view of finished
runs, side by side, with a time slider that replays them from their CSVs,
and their final counters on ``/metrics``. Also the ``--view`` options of
``aifabric run`` and ``aifabric up`` (:func:`add_view_options`,
:class:`LiveView`): the same page, fed while the run goes on.

The page listens on 127.0.0.1 unless another address is asked for (then a
warning: the page has no authentication). A port in use or a folder that
is not a run is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any, Callable

DEFAULT_PORT = 8765


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("view", help="web view of finished runs (replay, side by side)",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="RESULTS_DIR",
                   help="run directories (aifabric run --out)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only)")
    p.add_argument("--for", dest="for_s", type=float, metavar="SECONDS",
                   help="serve this long, then exit (default: until Ctrl-C)")
    p.set_defaults(func=_view)


def add_view_options(p: argparse.ArgumentParser, *, speed: bool = True) -> None:
    p.add_argument("--view", metavar="[HOST:]PORT",
                   help="watch it in a browser at http://HOST:PORT/ (HOST 127.0.0.1 unless "
                        "given; PORT 0: any free port); /metrics for Prometheus")
    if speed:
        p.add_argument("--view-speed", type=float, metavar="X",
                       help="with --view on sim: play at most X simulated seconds per wall "
                            "second (default: as fast as the sim runs)")
        p.add_argument("--view-linger", type=float, metavar="SECONDS",
                       help="with --view: keep the page up this long after the run "
                            "(default: until Ctrl-C)")


def _warn_if_open(host: str) -> None:
    from emulator.view.server import is_loopback

    if not is_loopback(host):
        print(f"aifabric: warning: the view listens on {host}: anyone who can reach this "
              "machine can see it (no authentication)", file=sys.stderr)


def _wait(for_s: float | None) -> None:
    """Until ``for_s`` has passed, or Ctrl-C (quietly)."""
    try:
        if for_s is None:
            threading.Event().wait()
        else:
            time.sleep(max(for_s, 0.0))
    except KeyboardInterrupt:
        pass


def _view(args: argparse.Namespace) -> int:
    from emulator.view.replay import load_replays
    from emulator.view.server import ViewServer

    runs = load_replays(args.dirs)
    _warn_if_open(args.host)
    server = ViewServer(runs, args.host, args.port).start()
    try:
        print(f"view of {len(runs)} run{'s' if len(runs) != 1 else ''} at {server.url} "
              f"(metrics: {server.url}metrics){'' if args.for_s is not None else '; Ctrl-C to stop'}",
              flush=True)
        _wait(args.for_s)
    finally:
        server.stop()
    return 0


class LiveView:
    """The page of a run (or of ``aifabric up``) while it goes on: the
    feed, its state and the server, started before the run so that a port
    in use stops it before anything is built."""

    def __init__(self, address: str, label: str, speed: float | None = None) -> None:
        from emulator.view.feed import RunState, ViewFeed
        from emulator.view.server import ViewServer, parse_address

        host, port = parse_address(address)
        if speed is not None and not speed > 0:
            from emulator.view.errors import ViewError
            raise ViewError(f"--view-speed {speed}: give a number of simulated seconds per "
                            "wall second > 0")
        _warn_if_open(host)
        self.state = RunState(label)
        self.feed = ViewFeed(self.state, speed=speed)
        self.server = ViewServer([self.state], host, port,
                                 dropped=lambda _s: self.feed.dropped).start()

    def announce(self, say: Callable[[str], None]) -> None:
        say(f"view: {self.server.url} (metrics: {self.server.url}metrics)")

    def finish(self, results: Any = None, error: str | None = None) -> None:
        self.feed.on_end(results, error)

    def linger(self, seconds: float | None, say: Callable[[str], None]) -> None:
        if seconds is None:
            say(f"the view stays at {self.server.url} until Ctrl-C")
        _wait(seconds)

    def stop(self) -> None:
        self.feed.close()
        self.server.stop()
