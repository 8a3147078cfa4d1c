"""The view's HTTP server: Starlette on uvicorn, in a thread of its own.

Routes:

- ``/``: the page (``static/index.html``); ``/static/...`` its scripts,
  styles and the vendored libraries;
- ``/api/runs``: the runs served (label, what they are, whether they ended);
- ``/api/runs/{i}/frames?since=N``: run ``i``'s frames from sequence ``N``;
- ``/api/runs/{i}/events``: Server-Sent Events: ``info`` (the run, its
  topology), ``frames`` (batches; each event's ``id`` is the next sequence
  number, so a browser that reconnects with ``Last-Event-ID`` gets what it
  missed and nothing twice) and ``end`` (the summary; the stream closes);
- ``/metrics``: Prometheus text (:mod:`.metrics`).

:class:`ViewServer` binds its socket itself before the server starts, so a
port in use is a :class:`~.errors.ViewError` (one line) before a run
begins. Streams end when :meth:`ViewServer.close_streams` or
:meth:`ViewServer.stop` is called, so stopping never waits on a browser.
"""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import threading
import time
from pathlib import Path
from typing import AsyncIterator, Callable, Sequence

import uvicorn
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from emulator.view.errors import ViewError
from emulator.view.feed import RunState
from emulator.view.metrics import make_registry, metrics_text

STATIC_DIR = Path(__file__).parent / "static"
BATCH_FRAMES = 500        # frames per SSE event (a late page catches up in a few)
POLL_S = 0.1              # how often a stream looks for new frames
RETRY_MS = 1000           # the browser's wait before it reconnects
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def parse_address(text: str) -> tuple[str, int]:
    """``PORT`` or ``HOST:PORT`` (``[v6]:PORT``) -> (host, port); loopback by default."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ViewError(f"--view {text!r}: give PORT or HOST:PORT with a port 0..65535")
    return host, port


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


class ViewServer:
    """Serve ``runs`` on ``host:port`` (0: any free port) until :meth:`stop`."""

    def __init__(self, runs: Sequence[RunState], host: str = "127.0.0.1", port: int = 0,
                 *, dropped: Callable[[RunState], int] | None = None) -> None:
        self.runs = list(runs)
        self.host = host
        self.port = port
        self._closing = threading.Event()
        self._generation = 0       # close_streams() moves it: streams of older ones end
        self._streams = 0          # streams open now (one per page and run)
        self._registry = make_registry(self.runs, dropped)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    # -- life ---------------------------------------------------------------------------
    def start(self) -> "ViewServer":
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise ViewError(f"view: port {self.port} on {self.host} is in use; "
                                "give another (or 0 for any free port)") from None
            raise ViewError(f"view: cannot listen on {self.host}:{self.port}: "
                            f"{exc.strerror or exc}") from None
        sock.listen(64)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", access_log=False,
                                lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="aifabric-view-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10.0
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                raise ViewError("view: the web server did not start within 10 s")
            time.sleep(0.01)
        return self

    def close_streams(self) -> None:
        """End every open event stream (browsers reconnect by themselves)."""
        self._generation += 1

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop serving; open streams get up to ``grace_s`` to send what is left
        (a run's end, so the page can say it)."""
        deadline = time.monotonic() + grace_s
        while self._streams and time.monotonic() < deadline:
            time.sleep(0.05)
        self._closing.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(5.0)

    def __enter__(self) -> "ViewServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the app ------------------------------------------------------------------------
    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/", self._index),
            Route("/favicon.ico", lambda _r: Response(status_code=204)),
            Route("/api/runs", self._runs),
            Route("/api/runs/{run:int}/frames", self._frames),
            Route("/api/runs/{run:int}/events", self._events),
            Route("/metrics", self._metrics),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ])

    def _run(self, request: Request) -> RunState:
        index = request.path_params["run"]
        if not 0 <= index < len(self.runs):
            raise ViewError(f"no run {index}")
        return self.runs[index]

    async def _index(self, _request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-store"})

    async def _runs(self, _request: Request) -> Response:
        out = []
        for i, state in enumerate(self.runs):
            snap = state.snapshot()
            out.append({"id": i, "label": state.label, "state": snap["info"].get("state"),
                        "name": snap["info"].get("name"), "next_seq": snap["next_seq"]})
        return JSONResponse(out)

    async def _frames(self, request: Request) -> Response:
        try:
            state = self._run(request)
        except ViewError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        since = int(request.query_params.get("since", "0") or 0)
        return JSONResponse({"frames": state.since(since), **state.snapshot()})

    async def _metrics(self, _request: Request) -> Response:
        return Response(metrics_text(self._registry), media_type=PROMETHEUS_TEXT)

    async def _events(self, request: Request) -> Response:
        try:
            state = self._run(request)
        except ViewError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        last = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
        try:
            since = int(last)
        except ValueError:
            since = 0
        return EventSourceResponse(self._stream(request, state, since), ping=10,
                                   headers={"Cache-Control": "no-store"})

    async def _stream(self, request: Request, state: RunState, since: int
                      ) -> AsyncIterator[ServerSentEvent]:
        self._streams += 1
        try:
            async for event in self._events_of(request, state, since):
                yield event
        finally:
            self._streams -= 1

    async def _events_of(self, request: Request, state: RunState, since: int
                         ) -> AsyncIterator[ServerSentEvent]:
        generation = self._generation
        seq = since
        snap = state.snapshot()
        seen_version = -1
        yield ServerSentEvent(json.dumps(snap["info"]), event="info", retry=RETRY_MS)
        info_state = snap["info"].get("state")
        while not self._closing.is_set() and generation == self._generation:
            if await request.is_disconnected():
                return
            version = state.version
            if version != seen_version:
                seen_version = version
                snap = state.snapshot()
                if snap["info"].get("state") != info_state:
                    info_state = snap["info"].get("state")
                    yield ServerSentEvent(json.dumps(snap["info"]), event="info")
                frames = state.since(seq)
                while frames:
                    batch = frames[:BATCH_FRAMES]
                    frames = frames[BATCH_FRAMES:]
                    seq = batch[-1]["seq"] + 1
                    yield ServerSentEvent(json.dumps(batch, separators=(",", ":")),
                                          event="frames", id=str(seq))
                if snap["ended"] is not None and seq >= snap["next_seq"]:
                    yield ServerSentEvent(json.dumps(snap["ended"]), event="end", id=str(seq))
                    return
            await asyncio.sleep(POLL_S)

