"""Processes: identity (pid plus start time), namespaces, stopping, ports.

Linux ``/proc`` only. A pid alone is not an identity (pids are reused), so
records keep the process start time (``/proc/<pid>/stat`` field 22) and
every kill checks it first.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Iterable

POLL_S = 0.02


def proc_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses.
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19])


def proc_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[0]


def pid_alive(pid: int, start_time: int | None = None) -> bool:
    """Whether ``pid`` runs (zombies count as gone) and, if ``start_time`` is
    given, is the process that had it."""
    if pid <= 0:
        return False
    state = proc_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    return start_time is None or proc_start_time(pid) == start_time


def proc_cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def netns_inode(pid: int | str) -> int | None:
    """Inode of the network namespace of ``pid`` (or of a path such as a
    /run/netns bind mount), or None."""
    path = pid if isinstance(pid, str) else f"/proc/{pid}/ns/net"
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def pids_in_netns(inodes: Iterable[int]) -> dict[int, list[int]]:
    """Processes (not zombies) in each of the namespaces ``inodes``."""
    wanted = {i for i in inodes if i}
    found: dict[int, list[int]] = {i: [] for i in wanted}
    if not wanted:
        return found
    for pid in all_pids():
        inode = netns_inode(pid)
        if inode in wanted and pid_alive(pid):
            found[inode].append(pid)
    return found


def kill_processes(procs: Iterable[tuple[int, int | None]], grace_s: float,
                   group: bool = False) -> list[int]:
    """SIGTERM each live (pid, start time), wait up to ``grace_s`` for all,
    SIGKILL the rest; ``group`` signals each process group (pgid = pid).
    Returns the pids that had to be killed with SIGKILL."""
    live = [(pid, start) for pid, start in procs if pid_alive(pid, start)]
    _signal_all(live, signal.SIGTERM, group)
    deadline = time.monotonic() + grace_s
    while live and time.monotonic() < deadline:
        time.sleep(POLL_S)
        live = [(pid, start) for pid, start in live if pid_alive(pid, start)]
    killed = [pid for pid, _ in live]
    _signal_all(live, signal.SIGKILL, group)
    deadline = time.monotonic() + 2.0
    while live and time.monotonic() < deadline:
        time.sleep(POLL_S)
        live = [(pid, start) for pid, start in live if pid_alive(pid, start)]
    return killed


def _signal_all(procs: list[tuple[int, int | None]], sig: int, group: bool) -> None:
    for pid, _start in procs:
        try:
            if group:
                try:
                    os.killpg(pid, sig)
                    continue
                except ProcessLookupError:
                    pass  # not a group leader any more: signal the process
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop_popen(procs: Iterable[subprocess.Popen], grace_s: float) -> list[int]:
    """Stop child processes started with ``start_new_session=True``: SIGTERM to
    each process group, SIGKILL after ``grace_s``, and reap them. Returns
    the pids that needed SIGKILL."""
    running = [p for p in procs if p.poll() is None]
    for proc in running:
        _killpg(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    killed = []
    for proc in running:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            killed.append(proc.pid)
            _killpg(proc, signal.SIGKILL)
    for proc in running:
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
    return killed


def _killpg(proc: subprocess.Popen, sig: int) -> None:
    # Only while the leader is unreaped: its pid (and group id) cannot be reused.
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass


def port_open(host: str, port: int, timeout_s: float = 0.2) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def tcp_port_held(host: str, port: int) -> bool:
    """Whether a socket holds ``host:port`` so that a server (binding as gRPC
    does, with ``SO_REUSEADDR``) could not listen there; a connection of an
    earlier run left in TIME_WAIT does not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


def free_tcp_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports free right now on ``host`` (the kernel's
    choice; another process may still take one before it is used)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


def tail(path: str | os.PathLike[str], lines: int = 15, max_bytes: int = 16384) -> str:
    """The last ``lines`` lines of a text file ('' if missing)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return ""
    text = data.decode(errors="replace").rstrip("\n")
    return "\n".join(text.splitlines()[-lines:])
