"""The agent's control channel: JSON lines over a unix stream socket.

The scenario runner connects to the socket the agent was started with
(``--control PATH``) and sends one JSON object per line; the agent answers
each with one line, ``{"ok": true, ...}`` or ``{"ok": false, "error":
"..."}``, echoing the request's ``"id"`` if it had one. Requests:

- ``{"op": "ping"}`` -> agent name and its clock (``now_unix``).
- ``{"op": "status"}`` -> per QP: messages outstanding, completed, failed,
  received, bytes acknowledged and received, CE marks and CNPs, current
  DCQCN rate; graph messages not posted yet. Small: poll it to wait for
  completion.
- ``{"op": "post", "qp": 17, "size_bytes": 1048576, "verb": "write",
  "at_unix": null}`` -> queue a WRITE (or ``"send"``) on QP 17 now, or at
  the wall-clock time ``at_unix``; answers the message ``id`` (null when
  deferred).
- ``{"op": "completions", "since": 0}`` -> the records of sent messages
  from index ``since`` on (status, posted/first_tx/acked times, FCT) and
  the index to ask from next time.
- ``{"op": "stats"}`` -> the full stats snapshot (as the stats file).
- ``{"op": "pfc_storm", "action": "start", "nic": "eth0", "priorities": [3],
  "quanta": 65535, "interval_us": null, "at_unix": null}`` -> the NIC sends
  PFC pause frames to its switch port (now, or at ``at_unix``) until
  ``{"op": "pfc_storm", "action": "stop", "nic": "eth0"}`` (which sends one
  XON unless ``"xon": false``); see :mod:`.storm`.
- ``{"op": "stop"}`` -> the agent stops, writes its stats file and exits.

:class:`ControlServer` lives in the agent's event loop (non-blocking, output
buffered per connection); :class:`AgentClient` is the runner's side.
"""

from __future__ import annotations

import json
import os
import select
import socket
import time
from typing import Any

from emulator.traffic.agent.agent import Agent, AgentError
from emulator.traffic.agent.loop import EventLoop
from emulator.traffic.agent.storm import storm_request

MAX_LINE_BYTES = 1 << 20


class ControlError(RuntimeError):
    """The agent answered a control request with an error, or did not answer."""


class _Conn:
    __slots__ = ("sock", "inbuf", "outbuf")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = b""
        self.outbuf = b""


class ControlServer:
    """Serves control requests for ``agent`` on a unix socket at ``path``."""

    def __init__(self, agent: Agent, loop: EventLoop, path: str) -> None:
        self.agent = agent
        self.loop = loop
        self.path = path
        if os.path.exists(path):
            os.unlink(path)  # a stale socket of an earlier run
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            sock.listen(16)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._conns: dict[int, _Conn] = {}
        loop.add(sock.fileno(), self._accept)

    def _accept(self, _events: int, _now: float) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            conn.setblocking(False)
            c = _Conn(conn)
            self._conns[conn.fileno()] = c
            self.loop.add(conn.fileno(), lambda ev, now, c=c: self._serve(c, ev, now))

    def _serve(self, c: _Conn, events: int, now: float) -> None:
        if events & select.EPOLLIN:
            try:
                data = c.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                data = b""
            if data == b"":
                self._close(c)
                return
            if data:
                c.inbuf += data
                if len(c.inbuf) > MAX_LINE_BYTES and b"\n" not in c.inbuf:
                    self._close(c)
                    return
                while b"\n" in c.inbuf:
                    line, c.inbuf = c.inbuf.split(b"\n", 1)
                    if line.strip():
                        c.outbuf += self.handle_line(line, now) + b"\n"
        elif events & (select.EPOLLHUP | select.EPOLLERR) and not events & select.EPOLLOUT:
            self._close(c)
            return
        self._flush(c)

    def _flush(self, c: _Conn) -> None:
        if c.outbuf:
            try:
                sent = c.sock.send(c.outbuf)
                c.outbuf = c.outbuf[sent:]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._close(c)
                return
        want = select.EPOLLIN | (select.EPOLLOUT if c.outbuf else 0)
        self.loop.modify(c.sock.fileno(), want)

    def _close(self, c: _Conn) -> None:
        fd = c.sock.fileno()
        self.loop.remove(fd)
        self._conns.pop(fd, None)
        c.sock.close()

    def handle_line(self, line: bytes, now: float) -> bytes:
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
        except ValueError as exc:
            return _dump({"ok": False, "error": f"bad request: {exc}"})
        try:
            answer = self.handle(request, now)
            answer = {"ok": True, **answer}
        except (AgentError, ValueError, TypeError, KeyError) as exc:
            answer = {"ok": False, "error": str(exc)}
        if "id" in request:
            answer["id"] = request["id"]
        return _dump(answer)

    def handle(self, request: dict[str, Any], now: float) -> dict[str, Any]:
        agent = self.agent
        op = request.get("op")
        if op == "ping":
            return {"agent": agent.config.name, "now_unix": now + agent.wall}
        if op == "status":
            return agent.status(now)
        if op == "stats":
            return {"stats": agent.snapshot(now)}
        if op == "completions":
            since = int(request.get("since", 0))
            sent = agent.log.sent
            return {"records": sent[since:], "next": len(sent)}
        if op == "post":
            qp, size = request["qp"], request["size_bytes"]
            verb = request.get("verb", "write")
            if not isinstance(qp, int) or not isinstance(size, int):
                raise ValueError("qp and size_bytes must be integers")
            at_unix = request.get("at_unix")
            at = None if at_unix is None else float(at_unix) - agent.wall
            return {"msg_id": agent.post(qp, verb, size, now, at=at)}
        if op == "stop":
            agent.stop("control", now)
            return {}
        if op == "pfc_storm":
            return storm_request(agent, request, now)
        raise ValueError(f"unknown op {op!r}")

    def close(self) -> None:
        for c in list(self._conns.values()):
            self._flush_blocking(c)
            self._close(c)
        self.loop.remove(self._sock.fileno())
        self._sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    @staticmethod
    def _flush_blocking(c: _Conn) -> None:
        """Last answers (to ``stop``, say) go out before the socket closes."""
        if c.outbuf:
            try:
                c.sock.settimeout(1.0)
                c.sock.sendall(c.outbuf)
            except OSError:
                pass
            c.outbuf = b""


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class AgentClient:
    """The runner's side of the control channel (blocking, one request at a time)."""

    def __init__(self, path: str, *, timeout_s: float = 10.0) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout_s)
        try:
            self._sock.connect(path)
        except OSError:
            self._sock.close()
            raise
        self._buf = b""
        self._next_id = 0

    @classmethod
    def wait(cls, path: str, timeout_s: float = 10.0) -> AgentClient:
        """Connect once the agent's socket accepts (it is made after the NICs open)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                client = cls(path)
                client.ping()
                return client
            except OSError:
                if time.monotonic() > deadline:
                    raise ControlError(f"no agent answered on {path} within {timeout_s} s")
                time.sleep(0.02)

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        self._next_id += 1
        msg = {"op": op, "id": self._next_id, **fields}
        self._sock.sendall(json.dumps(msg).encode() + b"\n")
        while b"\n" not in self._buf:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise ControlError(f"agent closed the control channel during {op!r}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ControlError(f"{op}: {answer.get('error')}")
        return answer

    def ping(self) -> dict[str, Any]:
        return self.request("ping")

    def status(self) -> dict[str, Any]:
        return self.request("status")

    def stats(self) -> dict[str, Any]:
        return self.request("stats")["stats"]

    def post(self, qp: int, size_bytes: int, verb: str = "write",
             at_unix: float | None = None) -> int | None:
        return self.request("post", qp=qp, size_bytes=size_bytes, verb=verb,
                            at_unix=at_unix)["msg_id"]

    def completions(self, since: int = 0) -> tuple[list[dict[str, Any]], int]:
        answer = self.request("completions", since=since)
        return answer["records"], answer["next"]

    def stop(self) -> None:
        self.request("stop")

    def pfc_storm(self, action: str, nic: str | None = None, **fields: Any) -> dict[str, Any]:
        """Start (``priorities``, ``quanta``, ``interval_us``) or stop (``xon``)
        a PFC storm on ``nic``; fields left out take the agent's defaults."""
        return self.request("pfc_storm", action=action,
                            **({} if nic is None else {"nic": nic}), **fields)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
