"""Helpers of the network root tests (no tests here): what a run left
behind, and a bring-up in a child process that can be signalled or killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pyroute2 import IPRoute

from emulator.network.naming import run_of_ifname, run_of_netns, run_of_switch_cmdline
from emulator.network.netlink import NETNS_RUN_DIR, link_names
from emulator.network.process import all_pids, pid_alive, proc_cmdline

REPO = Path(__file__).resolve().parents[2]
TOPOLOGIES = REPO / "topologies"

# Brings up a topology, starts `sleep` inside srv0, prints one JSON line
# (run id, record path, pids, workdir) and waits to be signalled.
CHILD = """
import json, sys, time
from emulator.network import FabricNetwork, NetworkOptions
from emulator.topology import load_topology
net = FabricNetwork(load_topology(sys.argv[1]), options=NetworkOptions(stop_grace_s=1.0))
net.start()
sleeper = net.host("srv0").popen(["sleep", "120"])
print(json.dumps({"run_id": net.run_id, "record": str(net.record_path), "pids": net.pids,
                  "sleeper": sleeper.pid, "workdir": str(net.workdir)}), flush=True)
with net:
    time.sleep(120)
"""


def leftovers(run_id: str, pids: list[int] = (), record: str | None = None) -> list[str]:
    """Everything of run ``run_id`` still on this machine."""
    found = []
    if os.path.isdir(NETNS_RUN_DIR):
        found += [f"netns {n}" for n in os.listdir(NETNS_RUN_DIR) if run_of_netns(n) == run_id]
    with IPRoute() as ipr:
        found += [f"interface {n}" for n in link_names(ipr) if run_of_ifname(n) == run_id]
    found += [f"switch process {p}" for p in all_pids()
              if run_of_switch_cmdline(proc_cmdline(p)) == run_id and pid_alive(p)]
    found += [f"process {p}" for p in pids if pid_alive(p)]
    if record and os.path.exists(record):
        found.append(f"record {record}")
    return found


class ChildRun:
    """A bring-up of ``topology`` in a child process."""

    def __init__(self, topology: str = "quickstart", timeout_s: float = 60.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(TOPOLOGIES / f"{topology}.yaml")], cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.kill()
            raise AssertionError(f"child bring-up failed:\n{self.proc.stderr.read()[-3000:]}")
        self.info = json.loads(line)
        self.run_id: str = self.info["run_id"]
        self.record: str = self.info["record"]
        self.pids = list(self.info["pids"].values()) + [self.info["sleeper"]]

    def signal(self, sig: int, timeout_s: float = 30.0) -> int:
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout_s)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def stderr(self) -> str:
        return self.proc.stderr.read() if self.proc.stderr else ""


def wait_until(predicate, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
