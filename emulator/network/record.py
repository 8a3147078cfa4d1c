"""Run records: what a run created, on disk while it runs, so a crashed
run's leftovers can be found and removed (``aifabric clean``).

One JSON file per run, ``<record dir>/<run id>.json`` (``/run/aifabric``
by default: a tmpfs, emptied at boot like the namespaces and interfaces it
lists). Creating it with ``O_EXCL`` reserves the run id. It is rewritten
(atomically: temporary file, then rename) as resources are planned or
created, and removed when teardown has removed everything; teardown that
leaves something behind keeps it.

Contents (``format`` ``aifabric-run/1``): ``run_id``, ``owner`` (pid and
process start time, to tell a live run from a dead one even after pid
reuse), ``created_s``, ``topology``, ``target``, ``workdir``, ``state``
(starting, up, stopping), and the resources: ``processes`` (pid, start
time, role ``switch``/``host-shell``/``switch-shell``, node),
``netns`` (bind-mount name and path, node, namespace inode),
``interfaces`` (root-namespace interface names) and ``files`` (path, and
``keep``: outputs such as logs are kept; temporary files are removed).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from emulator.network.errors import NetworkError
from emulator.network.naming import RUN_ID_RE, new_run_id
from emulator.network.process import pid_alive, proc_start_time

FORMAT = "aifabric-run/1"
DEFAULT_RECORD_DIR = "/run/aifabric"
ROLES = ("switch", "host-shell", "switch-shell")
_CREATE_TRIES = 50


class RunRecord:
    """The record of one run; methods add resources and save."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self._lock = threading.Lock()

    @property
    def run_id(self) -> str:
        return str(self.data["run_id"])

    @classmethod
    def create(cls, record_dir: str | os.PathLike[str], *,
               new_id: Callable[[], str] = new_run_id, **meta: Any) -> "RunRecord":
        """Reserve a fresh run id and write its record."""
        directory = Path(record_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o755)
        except OSError as exc:
            raise NetworkError(f"cannot create the run-record directory {directory}: "
                               f"{exc.strerror}") from None
        pid = os.getpid()
        for _ in range(_CREATE_TRIES):
            run_id = new_id()
            path = directory / f"{run_id}.json"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            except OSError as exc:
                raise NetworkError(f"cannot write run record {path}: {exc.strerror}") from None
            os.close(fd)
            data = {"format": FORMAT, "run_id": run_id,
                    "owner": {"pid": pid, "start_time": proc_start_time(pid),
                              "argv": list(sys.argv)},
                    "created_s": time.time(), "state": "starting", **meta,
                    "processes": [], "netns": [], "interfaces": [], "files": []}
            record = cls(path, data)
            record.save()
            return record
        raise NetworkError(f"no free run id in {directory} after {_CREATE_TRIES} tries")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "RunRecord":
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise NetworkError(f"run record {path} is unreadable: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or \
                not RUN_ID_RE.fullmatch(str(data.get("run_id", ""))):
            raise NetworkError(f"run record {path} is not an {FORMAT} record")
        for key in ("processes", "netns", "interfaces", "files"):
            data.setdefault(key, [])
        return cls(path, data)

    def save(self) -> None:
        with self._lock:
            text = json.dumps(self.data, indent=1, sort_keys=True) + "\n"
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            tmp.write_text(text)
            os.replace(tmp, self.path)

    def remove(self) -> None:
        with self._lock:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    # Adding resources (call save() after a batch).

    def set_state(self, state: str) -> None:
        self.data["state"] = state

    def add_process(self, pid: int, role: str, node: str) -> None:
        if role not in ROLES:
            raise ValueError(f"role {role!r} not in {ROLES}")
        self.data["processes"].append({"pid": pid, "start_time": proc_start_time(pid),
                                       "role": role, "node": node})

    def add_netns(self, name: str, path: str, node: str, inode: int | None) -> None:
        self.data["netns"].append({"name": name, "path": path, "node": node, "inode": inode})

    def add_interfaces(self, names: list[str]) -> None:
        known = set(self.data["interfaces"])
        self.data["interfaces"].extend(n for n in names if n not in known)

    def add_file(self, path: str | os.PathLike[str], keep: bool) -> None:
        self.data["files"].append({"path": str(path), "keep": keep})

    # Reading.

    @property
    def owner_pid(self) -> int:
        return int(self.data.get("owner", {}).get("pid", 0))

    def owner_alive(self) -> bool:
        """Whether the process that made this run still runs (same pid and
        start time)."""
        owner = self.data.get("owner", {})
        return pid_alive(int(owner.get("pid", 0)), owner.get("start_time"))


def load_records(record_dir: str | os.PathLike[str]) -> tuple[list[RunRecord], list[str]]:
    """All records in ``record_dir`` and the paths of unreadable ones."""
    directory = Path(record_dir)
    records, broken = [], []
    if not directory.is_dir():
        return records, broken
    for path in sorted(directory.glob("*.json")):
        try:
            records.append(RunRecord.load(path))
        except NetworkError:
            broken.append(str(path))
    return records, broken
