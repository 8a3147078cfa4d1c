"""Running a sim run on several MPI ranks: whether this process is one rank
of an MPI job, and starting such a job for ``aifabric run --ranks N``.

A user may start the job themselves (``mpiexec -n N --hostfile HOSTS
aifabric run FILE --target sim``, across machines), or let ``--ranks N``
start it on this machine: :func:`relaunch` runs the same command line under
``mpiexec -n N`` (Open MPI or MPICH, whichever is installed; as root, Open
MPI's ``--allow-run-as-root``; more ranks than cores, ``--oversubscribe``)
and waits for it. Every rank runs the same ``aifabric run``; rank 0 prints
and writes, the others stay quiet (:mod:`.sim`).

Ctrl-C: a launcher that gets SIGINT ends its job at once, results lost, so
:func:`relaunch` runs it in a session of its own and passes a Ctrl-C on as
a stop file (:data:`STOP_FILE_ENV` names it) that rank 0 looks for at every
window: every rank then stops with partial results (:func:`stop_requested`).

MPI is found from the environment the launcher gives its ranks
(Open MPI's ``OMPI_COMM_WORLD_SIZE``, MPICH's and PMIx's ``PMI_SIZE`` /
``PMIX_RANK``), so a process that is not a rank never initialises MPI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from emulator.network.naming import scratch_dir

RANK_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")
STOP_FILE_ENV = "AIFABRIC_STOP_FILE"
LAUNCHERS = ("mpiexec", "mpirun")


class MpiError(RuntimeError):
    """MPI is missing or the job cannot start: one line that says what to do."""


def under_mpi() -> bool:
    """Whether this process was started by an MPI launcher."""
    return any(name in os.environ for name in RANK_ENV)


def world() -> Any:
    """``MPI.COMM_WORLD`` when this process is a rank of a job of 2 or more
    ranks, else None."""
    if not under_mpi():
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise MpiError("this process runs under mpiexec but mpi4py is missing: run "
                       "make setup (it installs python3-mpi4py)") from None
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def launcher() -> str:
    for name in LAUNCHERS:
        path = shutil.which(name)
        if path:
            return path
    raise MpiError("--ranks needs an MPI launcher (mpiexec) and mpi4py: run make setup "
                   "(it installs openmpi-bin and python3-mpi4py)")


def _is_open_mpi(path: str) -> bool:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out or "OpenRTE" in out


def mpiexec_command(ranks: int, argv: list[str]) -> list[str]:
    """``mpiexec -n ranks`` (with what Open MPI needs here) around ``argv``."""
    path = launcher()
    command = [path, "-n", str(ranks)]
    if _is_open_mpi(path):
        if os.geteuid() == 0:
            command.append("--allow-run-as-root")
        command.append("--oversubscribe")
    return command + argv


def relaunch(ranks: int, argv: list[str]) -> int:
    """Run ``argv`` (a Python command line) as an MPI job of ``ranks`` ranks
    on this machine; its exit status. Ctrl-C reaches every rank (they share
    this terminal's process group) and the job ends with partial results."""
    try:
        import mpi4py  # noqa: F401  (checked here: every rank needs it)
    except ImportError:
        raise MpiError("--ranks needs mpi4py: run make setup (it installs "
                       "python3-mpi4py)") from None
    command = mpiexec_command(ranks, argv)
    with scratch_dir("mpi") as tmp:
        stop = Path(tmp) / "stop"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", STOP_FILE_ENV: str(stop)}
        proc = subprocess.Popen(command, env=env, start_new_session=True)
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # every rank stops at its next window
                stop.touch()


def stop_requested() -> bool:
    """Whether the ``aifabric run --ranks`` that started this job was
    interrupted (see the module docstring)."""
    path = os.environ.get(STOP_FILE_ENV)
    return bool(path) and os.path.exists(path)  # type: ignore[arg-type]
