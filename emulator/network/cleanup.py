"""Removing what crashed runs left behind (``aifabric clean``).

A run is *live* while the process that made it runs (its record's owner
pid, with the same start time); a live run is never touched. Everything
else that is ours goes:

1. **From run records** of dead runs (:mod:`.record`): recorded processes
   (checked by start time, so a reused pid is spared), every process inside
   a recorded namespace that is still bind-mounted (same inode), the bind
   mounts, recorded root-namespace interfaces, temporary files, and the
   record itself.
2. **From a scan**, for runs whose record is gone: namespace bind mounts
   named ``afx-<run>-*`` under /run/netns and the processes inside them,
   interfaces named ``afx<run>s<i>p<n>``, and switch processes
   (``aifabric-switch`` or ``simple_switch_grpc``) whose ``-i`` arguments
   name such interfaces. See :mod:`.naming` for why these patterns cannot
   match other people's names.
3. **Scratch folders** in the temporary folder named
   ``aifabric-<kind>-<pid>-*`` (:func:`.naming.scratch_dir`: a sim rank's,
   the MPI launcher's, ...) whose process is gone: a run killed before it
   could remove them.

Mininet's own leftovers are the node shells (``bash ... mininet:<node>``);
a shell exits when the run's process dies (its pty closes), and the ones
that remain are recorded or sit in one of our namespaces. Nothing else is
touched: no ``mn -c``, no OVS, no other users' namespaces or processes.

Library code: :func:`clean` returns a :class:`CleanReport`; the CLI
prints it.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterable

from pyroute2 import IPRoute

from emulator.network import netlink
from emulator.network.naming import (
    owner_of_scratch, run_of_ifname, run_of_netns, run_of_switch_cmdline,
)
from emulator.network.process import (
    all_pids, kill_processes, netns_inode, pid_alive, pids_in_netns, proc_cmdline,
    proc_start_time,
)
from emulator.network.record import DEFAULT_RECORD_DIR, RunRecord, load_records

SHELL_ROLES = ("host-shell", "switch-shell")
BROKEN_RECORD_AGE_S = 60.0
INTERFACE_GONE_TIMEOUT_S = 10.0


@dataclass
class CleanReport:
    """What :func:`clean` removed (or, in a dry run, would remove)."""

    removed: list[str] = field(default_factory=list)
    live_runs: list[str] = field(default_factory=list)  # "k3f9 (pid 1234)"
    failed: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed


@dataclass
class _RunLeftovers:
    run_id: str
    record: RunRecord | None = None
    processes: dict[int, tuple[int | None, str, bool]] = field(default_factory=dict)
    netns: dict[str, str] = field(default_factory=dict)  # path -> node
    interfaces: set[str] = field(default_factory=set)

    def add_process(self, pid: int, start: int | None, what: str, hard: bool) -> None:
        self.processes.setdefault(pid, (start, what, hard))


def clean(record_dir: str = DEFAULT_RECORD_DIR, dry_run: bool = False,
          run_ids: Iterable[str] | None = None, grace_s: float = 2.0,
          scratch_root: str | None = None) -> CleanReport:
    """Remove the leftovers of dead runs (only of ``run_ids`` if given;
    scratch folders, which name no run, only without ``run_ids``), looking
    for scratch folders in ``scratch_root`` (default: the system's temporary
    folder)."""
    report = CleanReport(dry_run=dry_run)
    wanted = set(run_ids) if run_ids is not None else None
    records, broken = load_records(record_dir)
    live = {r.run_id for r in records if r.owner_alive()}
    report.live_runs = sorted(f"{r.run_id} (pid {r.owner_pid})" for r in records
                              if r.run_id in live and (wanted is None or r.run_id in wanted))
    runs: dict[str, _RunLeftovers] = {}

    def run(run_id: str) -> _RunLeftovers | None:
        if run_id in live or (wanted is not None and run_id not in wanted):
            return None
        return runs.setdefault(run_id, _RunLeftovers(run_id))

    for record in records:
        found = run(record.run_id)
        if found is not None:
            found.record = record
            _from_record(found, record)
    _scan(run)
    for found in sorted(runs.values(), key=lambda r: r.run_id):
        _remove_run(found, report, dry_run, grace_s)
    if wanted is None:
        _remove_broken_records(broken, report, dry_run)
        _remove_dead_scratch(scratch_root or tempfile.gettempdir(), report, dry_run)
    return report


def _from_record(found: _RunLeftovers, record: RunRecord) -> None:
    inodes = []
    for proc in record.data["processes"]:
        if pid_alive(proc["pid"], proc.get("start_time")):
            found.add_process(proc["pid"], proc.get("start_time"),
                              f"{proc['role']} process {proc['pid']} ({proc['node']})",
                              hard=proc["role"] in SHELL_ROLES)
    for ns in record.data["netns"]:
        path = ns["path"]
        if os.path.lexists(path):
            found.netns[path] = ns.get("node", "?")
            if ns.get("inode") and netns_inode(path) == ns["inode"]:
                inodes.append(ns["inode"])
    for inode, pids in pids_in_netns(inodes).items():
        for pid in pids:
            found.add_process(pid, proc_start_time(pid),
                              _describe(pid, "process", "in a run namespace"), hard=False)
    found.interfaces.update(record.data["interfaces"])


def _scan(run) -> None:  # type: ignore[no-untyped-def]
    """Our names on the system, attributed to runs (``run(id)`` returns the
    run's leftovers, or None for runs to leave alone)."""
    mounts: dict[int, _RunLeftovers] = {}
    try:
        names = os.listdir(netlink.NETNS_RUN_DIR)
    except FileNotFoundError:
        names = []
    for name in names:
        run_id = run_of_netns(name)
        found = run(run_id) if run_id else None
        if found is None:
            continue
        path = os.path.join(netlink.NETNS_RUN_DIR, name)
        found.netns.setdefault(path, name.split("-", 2)[-1])
        inode = netns_inode(path)
        if inode:
            mounts[inode] = found
    for inode, pids in pids_in_netns(mounts).items():
        for pid in pids:
            mounts[inode].add_process(pid, proc_start_time(pid),
                                      _describe(pid, "process", "in a run namespace"), hard=False)
    with IPRoute() as ipr:
        for name in netlink.link_names(ipr):
            run_id = run_of_ifname(name)
            found = run(run_id) if run_id else None
            if found is not None:
                found.interfaces.add(name)
    for pid in all_pids():
        run_id = run_of_switch_cmdline(proc_cmdline(pid))
        found = run(run_id) if run_id else None
        if found is not None and pid_alive(pid):
            found.add_process(pid, proc_start_time(pid), _describe(pid, "switch process"),
                              hard=False)


def _remove_run(found: _RunLeftovers, report: CleanReport, dry_run: bool,
                grace_s: float) -> None:
    prefix = f"run {found.run_id}: "
    with IPRoute() as ipr:
        existing = set(netlink.link_names(ipr))
    interfaces = sorted(found.interfaces & existing)
    files = []
    if found.record is not None:
        files = [f["path"] for f in found.record.data["files"]
                 if not f.get("keep") and os.path.lexists(f["path"])]
    items = ([what for _s, what, _h in found.processes.values()]
             + [f"namespace mount {path}" for path in sorted(found.netns)]
             + [f"interface {name}" for name in interfaces]
             + [f"file {path}" for path in files])
    if found.record is not None:
        items.append(f"run record {found.record.path}")
    if dry_run:
        report.removed += [prefix + item for item in items]
        return
    hard = [(pid, s) for pid, (s, _w, h) in found.processes.items() if h]
    soft = [(pid, s) for pid, (s, _w, h) in found.processes.items() if not h]
    for pid, start in hard:
        if pid_alive(pid, start):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    kill_processes(soft, grace_s, group=False)
    for path in sorted(found.netns):
        try:
            netlink.unbind_netns(path)
        except OSError as exc:
            report.failed.append(f"{prefix}namespace mount {path}: {exc}")
    with IPRoute() as ipr:
        try:
            netlink.delete_links(ipr, interfaces)
        except Exception as exc:  # reported, the rest still goes
            report.failed.append(f"{prefix}interfaces: {exc}")
        deadline = time.monotonic() + INTERFACE_GONE_TIMEOUT_S
        while _run_links(ipr, found.run_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        still = _run_links(ipr, found.run_id)
    for path in files:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError as exc:
            report.failed.append(f"{prefix}file {path}: {exc.strerror}")
    time.sleep(0.05)
    alive = [what for pid, (s, what, _h) in found.processes.items() if pid_alive(pid, s)]
    report.failed += [prefix + what + " still runs" for what in alive]
    report.failed += [f"{prefix}interface {name} still exists" for name in still]
    report.failed += [f"{prefix}namespace mount {p} still exists" for p in found.netns
                      if os.path.lexists(p)]
    if found.record is not None and not alive and not still:
        found.record.remove()
    report.removed += [prefix + item for item in items]


def _run_links(ipr: IPRoute, run_id: str) -> list[str]:
    return [n for n in netlink.link_names(ipr) if run_of_ifname(n) == run_id]


def _remove_broken_records(paths: list[str], report: CleanReport, dry_run: bool) -> None:
    now = time.time()
    for path in paths:
        try:
            age = now - os.stat(path).st_mtime
        except FileNotFoundError:
            continue
        if age < BROKEN_RECORD_AGE_S:
            continue  # may be a record being written right now
        if not dry_run:
            os.unlink(path)
        report.removed.append(f"unreadable run record {path}")


def _remove_dead_scratch(root: str, report: CleanReport, dry_run: bool) -> None:
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return
    for name in names:
        pid = owner_of_scratch(name)
        path = os.path.join(root, name)
        if pid is None or pid_alive(pid) or not os.path.isdir(path) or os.path.islink(path):
            continue
        if not dry_run:
            try:
                shutil.rmtree(path)
            except OSError as exc:
                report.failed.append(f"scratch folder {path}: {exc.strerror}")
                continue
        report.removed.append(f"scratch folder {path} (process {pid} is gone)")


def _describe(pid: int, what: str, where: str = "") -> str:
    argv = proc_cmdline(pid)
    name = os.path.basename(argv[0]) if argv else "?"
    if len(argv) > 1 and name.startswith("python"):
        name = os.path.basename(argv[1])
    return f"{what} {pid} ({name}){' ' + where if where else ''}"
