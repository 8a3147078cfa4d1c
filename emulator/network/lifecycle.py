"""The life of one emulated network, whatever it was built from:
:class:`NetworkRun`, the base of :class:`~.fabric_net.FabricNetwork` (a
fabric topology) and :class:`~.exercise_net.ExerciseNetwork` (a p4lang
tutorials exercise).

A subclass's ``_bring_up`` builds the network with the helpers here:
reserve a run id and write the run record (:mod:`.record`), add Mininet
hosts (namespace bind-mounted as ``/run/netns/afx-<run>-<host>``) and switch
nodes, launch every switch process at once and wait until each gRPC port
accepts connections.

Teardown removes everything the run made, whatever happened: on leaving
the ``with`` block (normally or by an exception), on SIGINT, SIGTERM and
SIGHUP (handlers are installed for the duration, see :mod:`.guard`), at
interpreter exit, and when a switch process dies (the main thread gets a
:class:`~.errors.SwitchDiedError` naming the switch, with its log tail).
Switch processes first (SIGTERM, SIGKILL after a grace period), then every
process in the hosts' namespaces, Mininet's shells, namespace bind mounts,
remaining interfaces and temporary files. The run record goes last, and
only if nothing is left; otherwise ``aifabric clean`` finds it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mininet.net import Mininet
from pyroute2 import IPRoute

from emulator.network import netlink
from emulator.network.command import DEFAULT_CPU_PORT, SwitchLaunch
from emulator.network.errors import (
    FabricInterrupted, NetworkError, SwitchStartError, TeardownError,
)
from emulator.network.guard import SignalGuard, SwitchMonitor
from emulator.network.naming import netns_name, run_of_ifname
from emulator.network.nodes import FabricHost
from emulator.network.plan import DEFAULT_MTU, PortPlan
from emulator.network.process import (
    free_tcp_ports, kill_processes, netns_inode, pid_alive, pids_in_netns, proc_start_time,
    stop_popen,
)
from emulator.network.record import DEFAULT_RECORD_DIR, RunRecord
from emulator.network.switches import (
    DEFAULT_START_TIMEOUT_S, DEFAULT_STOP_GRACE_S, SWITCH_CLASSES, P4SwitchNode,
)

INTERFACE_GONE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class NetworkOptions:
    """Settings of a network that its description does not give."""

    mtu: int = DEFAULT_MTU
    # per queue of every switch port (BMv2: its depth; built-in target: the
    # static cap of each lossy queue); about BMv2's default of 64 x 1500 B
    buffer_bytes: int = 96_000
    # BMv2 only: its queue rate and depth count frames; they are counted at
    # this size (a run passes its RoCE data frame; see emulator.network.bmv2).
    queue_frame_bytes: int = 1514
    priority_queues: int = 8
    cpu_port: int | None = DEFAULT_CPU_PORT
    log_level: str = "info"
    pcap: bool = False  # captures in <workdir>/pcap/<switch>/
    # Ports base + switch index, which must be free; None: ports the kernel
    # says are free (the default, so runs can share a machine).
    grpc_port_base: int | None = None
    thrift_port_base: int | None = None
    device_id_base: int = 1  # device id = base + switch index
    # The run's seed: each built-in switch draws from its own stream,
    # emulator.targets.builtin.config.switch_seed(seed, its name).
    seed: int = 0
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    stop_grace_s: float = DEFAULT_STOP_GRACE_S
    record_dir: str = DEFAULT_RECORD_DIR
    bind_netns: bool = True
    handle_signals: bool = True


class NetworkRun:
    """One network's life cycle; a context manager. Subclasses implement
    ``_bring_up``.

    ``target`` is ``"builtin"`` or ``"bmv2"``; ``workdir`` receives switch
    logs, outputs, port settings and captures (a temporary directory, removed
    at teardown, when None).

    Attributes once started: ``run_id``, ``workdir``, ``net`` (the Mininet
    object; stop the network with :meth:`stop`, not ``net.stop()``),
    ``timings`` (seconds per bring-up phase, ``bringup_s``, ``teardown_s``),
    ``pids``, ``record_path``, ``failure``.
    """

    def __init__(self, name: str, target: str = "builtin",
                 workdir: str | os.PathLike[str] | None = None,
                 options: NetworkOptions | None = None) -> None:
        if target not in SWITCH_CLASSES:
            raise NetworkError(f"unknown switch target {target!r}; known: "
                               f"{', '.join(sorted(SWITCH_CLASSES))}")
        self.name = name
        self.target = target
        self.options = options or NetworkOptions()
        self.run_id: str | None = None
        self.workdir: Path | None = None
        self.net: Mininet | None = None
        self.timings: dict[str, float] = {}
        self._workdir_arg = workdir
        self._record: RunRecord | None = None
        self._root_ipr: IPRoute | None = None
        self._hosts: dict[str, FabricHost] = {}
        self._switches: dict[str, P4SwitchNode] = {}
        self._host_netns: dict[str, tuple[str | None, int | None]] = {}  # bind path, inode
        self._port_plans: dict[str, tuple[PortPlan, ...]] = {}
        self._state = "new"
        self._lock = threading.Lock()
        self._failure: NetworkError | None = None
        self._failure_raised = False
        self._guard = SignalGuard(self._take_failure)
        self._owner_pid = os.getpid()
        self._monitor: SwitchMonitor | None = None

    # Life cycle.

    def __enter__(self) -> "NetworkRun":
        return self.start()

    def __exit__(self, exc_type: Any, exc: BaseException | None, _tb: Any) -> bool:
        self.stop(error=exc)
        if exc is None:
            self.check()
        return False

    def start(self) -> "NetworkRun":
        """Bring the network up (once); on any failure, tear down and raise."""
        with self._lock:
            if self._state != "new":
                raise NetworkError(f"this network was already started (state {self._state})")
            self._state = "starting"
        self._owner_pid = os.getpid()
        if os.geteuid() != 0:
            self._state = "down"
            raise NetworkError("bringing up a network needs root (namespaces, veth pairs)")
        atexit.register(self._at_exit)
        try:
            if self.options.handle_signals:
                self._guard.install()
            self._bring_up()
            self._state = "up"
            self._monitor = SwitchMonitor(
                {name: (node.proc, node.log_paths()) for name, node in self._switches.items()},
                self._on_switch_death)
            self._monitor.start()
        except BaseException as exc:
            self.stop(error=exc)
            raise
        return self

    def stop(self, error: BaseException | None = None) -> None:
        """Tear everything down (idempotent). Raises :class:`TeardownError` if
        something is left, unless ``error`` (the exception already on its way
        out) is given: then the leftovers are noted on it. Does nothing in a
        forked child of the process that started the network."""
        if os.getpid() != self._owner_pid:
            return
        self._guard.quiet = True  # first: no signal may cut teardown short from here on
        with self._lock:
            if self._state in ("down", "stopping"):
                return
            self._state = "stopping"
        try:
            started = time.monotonic()
            leftovers = self._teardown()
            self.timings["teardown_s"] = time.monotonic() - started
        finally:
            self._state = "down"
            self._guard.restore()
            atexit.unregister(self._at_exit)
        if leftovers:
            message = (f"teardown of run {self.run_id} left: {'; '.join(leftovers)} "
                       f"(run 'aifabric clean' to remove them)")
            if error is None:
                raise TeardownError(message)
            if hasattr(error, "add_note"):
                error.add_note(message)
        deferred = self._guard.deferred
        if deferred == signal.SIGTERM and self._failure is not None:
            deferred = None  # the monitor's own wake-up call; check() raises the failure
        if error is None and deferred is not None and threading.current_thread() is \
                threading.main_thread():
            raise FabricInterrupted(deferred)

    def check(self) -> None:
        """Raise the :class:`SwitchDiedError` of a switch that died, if any."""
        if self._failure is not None and not self._failure_raised:
            self._failure_raised = True
            raise self._failure

    @property
    def failure(self) -> NetworkError | None:
        return self._failure

    @property
    def is_up(self) -> bool:
        return self._state == "up"

    # What callers use while the network is up.

    def switch_addresses(self) -> dict[str, str]:
        """gRPC address (P4Runtime, QueueControl) of every switch."""
        return {name: node.grpc_addr for name, node in self._switches.items()}

    def device_ids(self) -> dict[str, int]:
        return {name: node.launch_spec.device_id for name, node in self._switches.items()}

    def switch(self, name: str) -> P4SwitchNode:
        """The Mininet node of a switch (its ``launch_spec``, ``proc``, ...)."""
        found = self._switches.get(name)
        if found is None:
            raise NetworkError(f"no switch {name!r} in this network (switches: "
                               f"{', '.join(self._switches)})")
        return found

    def host(self, name: str) -> FabricHost:
        """The Mininet host called ``name``."""
        found = self._hosts.get(name)
        if found is None:
            raise NetworkError(f"no host {name!r} in this network (hosts: {', '.join(self._hosts)})")
        return found

    def netns_name(self, host: str) -> str | None:
        """The name for ``ip netns exec`` of a host's namespace."""
        path = self._host_netns.get(host, (None, None))[0]
        return os.path.basename(path) if path else None

    def switch_interfaces(self) -> dict[str, dict[int, str]]:
        """Root-namespace interface of every switch port."""
        return {name: {p.port: p.ifname for p in ports} for name, ports in self._port_plans.items()}

    def interface_counters(self, server: str | None = None) -> dict[str, dict[str, int]]:
        """Kernel counters of a host's NICs, or of all switch ports."""
        if server is not None:
            return self.host(server).counters()
        names = [p.ifname for ports in self._port_plans.values() for p in ports]
        with IPRoute() as ipr:
            return netlink.link_counters(ipr, names)

    @property
    def pids(self) -> dict[str, int]:
        """Switch process of every switch and shell of every host, by name."""
        out = {name: node.proc.pid for name, node in self._switches.items() if node.proc}
        out.update({name: host.pid for name, host in self._hosts.items() if host.pid})
        return out

    @property
    def record_path(self) -> Path | None:
        return self._record.path if self._record else None

    # Bring-up helpers.

    def _bring_up(self) -> None:
        raise NotImplementedError

    def _new_record(self) -> RunRecord:
        record = RunRecord.create(self.options.record_dir, topology=self.name,
                                  target=self.target, workdir=None)
        self._record = record
        self.run_id = record.run_id
        return record

    def _make_workdir(self, record: RunRecord) -> Path:
        if self._workdir_arg is None:
            workdir = Path(tempfile.mkdtemp(prefix=f"aifabric-{self.run_id}-"))
            record.add_file(workdir, keep=False)
        else:
            workdir = Path(self._workdir_arg).resolve()
            workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        record.data["workdir"] = str(workdir)
        return workdir

    def _new_mininet(self, host_cls: type[FabricHost], link_cls: type, intf_cls: type) -> Mininet:
        self.net = Mininet(topo=None, switch=SWITCH_CLASSES[self.target], host=host_cls,
                           controller=None, link=link_cls, intf=intf_cls, build=False,
                           inNamespace=False)
        self._root_ipr = IPRoute()
        return self.net

    def _add_host(self, record: RunRecord, name: str, cls: type[FabricHost]) -> FabricHost:
        assert self.net is not None and self.run_id is not None
        host = self.net.addHost(name, cls=cls, ip=None)
        self._hosts[name] = host
        record.add_process(host.pid, "host-shell", name)
        inode = netns_inode(host.pid)
        path = None
        if self.options.bind_netns:
            path = netlink.bind_netns(netns_name(self.run_id, name), host.pid)
            record.add_netns(os.path.basename(path), path, name, inode)
        self._host_netns[name] = (path, inode)
        record.save()
        return host

    def _add_switch(self, record: RunRecord, launch: SwitchLaunch) -> P4SwitchNode:
        assert self.net is not None
        node = self.net.addSwitch(launch.name, cls=SWITCH_CLASSES[self.target], launch=launch)
        self._switches[launch.name] = node
        record.add_process(node.pid, "switch-shell", launch.name)
        return node

    def _log_files(self, record: RunRecord, directory: Path, switch: str) -> tuple[Path, Path]:
        """A fresh ``<switch>.log`` and ``<switch>.out`` (kept after the run)."""
        files = (directory / f"{switch}.log", directory / f"{switch}.out")
        for path in files:
            path.unlink(missing_ok=True)
            record.add_file(path, keep=True)
        return files

    def _launch_switches(self, record: RunRecord) -> None:
        """Spawn every switch process (not waiting for them)."""
        for name, node in self._switches.items():
            node.launch()
            record.add_process(node.proc.pid, "switch", name)  # type: ignore[union-attr]
        record.save()

    def _wait_ready(self) -> None:
        timeout_s = self.options.start_timeout_s
        deadline = time.monotonic() + timeout_s
        pending = list(self._switches.values())
        while True:
            pending = [node for node in pending if not node.poll_ready()]
            if not pending:
                break
            if time.monotonic() > deadline:
                others = ", ".join(n.name for n in pending[1:])
                error = pending[0].not_ready_error(timeout_s)
                if others:
                    error = SwitchStartError(f"{error} (also not ready: {others})")
                raise error
            time.sleep(0.05)
        for node in self._switches.values():
            node.after_ready()

    # A switch died.

    def _on_switch_death(self, error: NetworkError) -> None:
        with self._lock:
            if self._state != "up" or self._failure is not None:
                return
            self._failure = error
        # The main thread raises it (and its with-block tears down); without
        # handlers there is no way in, so tear down from here.
        if not self._guard.interrupt_main():
            try:
                self.stop(error=error)
            except NetworkError:
                pass

    def _take_failure(self) -> BaseException | None:
        if self._failure is not None and not self._failure_raised:
            self._failure_raised = True
            return self._failure
        return None

    def _at_exit(self) -> None:
        self.stop(error=self._failure)

    # Teardown.

    def _teardown(self) -> list[str]:
        """Remove everything; returns what could not be removed."""
        errors: list[str] = []

        def step(what: str, action: Callable[[], Any]) -> None:
            try:
                action()
            except Exception as exc:  # keep going: the rest must go too
                errors.append(f"{what}: {exc}")

        grace = self.options.stop_grace_s
        if self._monitor is not None:
            step("monitor", self._monitor.stop)
        record = self._record
        if record is not None:
            record.set_state("stopping")
            step("run record", record.save)
        step("switch processes", lambda: self._stop_switch_processes(grace))
        # Mininet's shells first (SIGHUP: an interactive bash ignores SIGTERM),
        # then whatever else still runs in the hosts' namespaces.
        for host in self._hosts.values():
            step(f"host {host.name}", host.terminate)
        inodes = [inode for _path, inode in self._host_netns.values() if inode]
        step("host processes", lambda: kill_processes(
            [(pid, proc_start_time(pid)) for pids in pids_in_netns(inodes).values()
             for pid in pids], grace))
        for switch in self._switches.values():
            step(f"switch node {switch.name}", switch.terminate)
        for path, _inode in self._host_netns.values():
            if path:
                step(f"netns {path}", lambda path=path: netlink.unbind_netns(path))
        step("interfaces", self._remove_interfaces)
        if self._root_ipr is not None:
            step("netlink", self._root_ipr.close)
            self._root_ipr = None
        if record is not None:
            step("files", lambda: _remove_files(record))
        leftovers = errors + self._leftovers()
        if record is not None:
            if leftovers:
                record.set_state("teardown-incomplete")
                step("run record", record.save)
            else:
                record.remove()
        return leftovers

    def _stop_switch_processes(self, grace_s: float) -> None:
        procs = [node.proc for node in self._switches.values() if node.proc is not None]
        stop_popen(procs, grace_s)
        for node in self._switches.values():
            node.close_output()

    def _remove_interfaces(self) -> None:
        """Delete this run's root-namespace interfaces (the veths of host
        links may already be going with their namespaces)."""
        if self.run_id is None:
            return
        with IPRoute() as ipr:
            netlink.delete_links(ipr, [n for n in netlink.link_names(ipr)
                                       if run_of_ifname(n) == self.run_id])
            deadline = time.monotonic() + INTERFACE_GONE_TIMEOUT_S
            while any(run_of_ifname(n) == self.run_id for n in netlink.link_names(ipr)):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)

    def _leftovers(self) -> list[str]:
        found: list[str] = []
        record = self._record
        if record is None:
            return found
        for proc in record.data["processes"]:
            if pid_alive(proc["pid"], proc["start_time"]):
                found.append(f"{proc['role']} process {proc['pid']} ({proc['node']})")
        for ns in record.data["netns"]:
            if os.path.lexists(ns["path"]):
                found.append(f"namespace mount {ns['path']}")
        if self.run_id is not None:
            with IPRoute() as ipr:
                found += [f"interface {n}" for n in netlink.link_names(ipr)
                          if run_of_ifname(n) == self.run_id]
        return found


class PhaseClock:
    """Phase durations of a bring-up, into ``timings``."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self.last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.timings[name] = now - self.last
        self.last = now


def tcp_ports(base: int | None, count: int) -> list[int]:
    """``count`` ports from ``base`` on, or ports the kernel says are free."""
    return list(range(base, base + count)) if base is not None else free_tcp_ports(count)


def _remove_files(record: RunRecord) -> None:
    for entry in record.data["files"]:
        if entry.get("keep"):
            continue
        path = entry["path"]
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
