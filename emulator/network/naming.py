"""Names of everything a run creates outside its hosts, so that a crashed
run's leftovers can be told apart from anyone else's.

A run id is four characters, a letter then letters or digits (``k3f9``);
it is reserved by creating the run record with ``O_EXCL`` (see
:mod:`.record`), so two live runs on one machine never share one.

- Switch ports live in the root namespace (switches run there), so their
  interfaces carry the run id: ``afx<run>s<switch index>p<port>``
  (``afxk3f9s0p1``, at most 15 characters: Linux's IFNAMSIZ). The
  topology's name for the port (``leaf-r0-0-eth1``) is set as the
  interface's alias, ``aifabric:<run>:leaf-r0-0-eth1``.
- A server's namespace is bind-mounted as ``/run/netns/afx-<run>-<server>``,
  so ``ip netns exec afx-k3f9-srv0 ...`` works during the run.
- Host NICs keep the topology's names (``srv0-eth0``): they live inside the
  server's namespace and cannot collide.

- Scratch folders of runs without a run record (a sim rank's, the MPI
  launcher's, a calibration's, a benchmark's) sit in the system's temporary
  folder as ``aifabric-<kind>-<pid>-<random>``: the pid of the process that
  made it, so ``aifabric clean`` can remove the ones whose process is gone
  (killed before it could remove its own).

Because a run id starts with a letter, names built from process ids (as
other tests on this machine use, ``afx-<pid>-sw``) never match these
patterns.
"""

from __future__ import annotations

import os
import re
import secrets
import string
import tempfile

from emulator.network.errors import NetworkError

RUN_ID_LEN = 4
MAX_IFNAME_CHARS = 15
NETNS_PREFIX = "afx-"
ALIAS_PREFIX = "aifabric"
RUN_ID_RE = re.compile(r"[a-z][a-z0-9]{3}")
SWITCH_IFNAME_RE = re.compile(r"^afx([a-z][a-z0-9]{3})s(\d+)p(\d+)$")
NETNS_RE = re.compile(r"^afx-([a-z][a-z0-9]{3})-([A-Za-z0-9_.-]+)$")
# "-i 3@afxk3f9s0p3" on a switch command line.
SWITCH_ARG_RE = re.compile(r"^\d+@afx([a-z][a-z0-9]{3})s\d+p\d+$")
SCRATCH_KINDS = ("rank", "mpi", "cal", "bench")
SCRATCH_RE = re.compile(r"^aifabric-(?:" + "|".join(SCRATCH_KINDS) + r")-(\d+)-[a-z0-9_]+$")


def new_run_id() -> str:
    """A random run id: one letter, then three letters or digits."""
    rest = string.ascii_lowercase + string.digits
    return secrets.choice(string.ascii_lowercase) + "".join(
        secrets.choice(rest) for _ in range(RUN_ID_LEN - 1))


def check_run_id(run_id: str) -> str:
    if not RUN_ID_RE.fullmatch(run_id):
        raise NetworkError(f"run id {run_id!r} is not a letter and three letters or digits")
    return run_id


def switch_ifname(run_id: str, switch_index: int, port: int) -> str:
    """The root-namespace interface of a switch port."""
    name = f"afx{check_run_id(run_id)}s{switch_index}p{port}"
    if len(name) > MAX_IFNAME_CHARS:
        raise NetworkError(
            f"switch {switch_index} port {port}: interface name {name!r} is longer than "
            f"{MAX_IFNAME_CHARS} characters (at most 999 switches and 999 ports)")
    return name


def switch_ifalias(run_id: str, topology_intf: str) -> str:
    return f"{ALIAS_PREFIX}:{run_id}:{topology_intf}"


def netns_name(run_id: str, server: str) -> str:
    """The name under /run/netns of a server's namespace."""
    return f"{NETNS_PREFIX}{check_run_id(run_id)}-{server}"


def run_of_ifname(name: str) -> str | None:
    """The run id in a switch-port interface name, or None if not ours."""
    found = SWITCH_IFNAME_RE.match(name)
    return found.group(1) if found else None


def run_of_netns(name: str) -> str | None:
    """The run id in a /run/netns name, or None if not ours."""
    found = NETNS_RE.match(name)
    return found.group(1) if found else None


def run_of_switch_cmdline(argv: list[str]) -> str | None:
    """The run id of a switch process (``-i PORT@afx<run>s..p..``), or None."""
    for arg in argv:
        found = SWITCH_ARG_RE.match(arg)
        if found:
            return found.group(1)
    return None


def scratch_dir(kind: str) -> "tempfile.TemporaryDirectory[str]":
    """A scratch folder named after this process (see the module
    docstring), removed when the ``with`` block ends."""
    if kind not in SCRATCH_KINDS:
        raise ValueError(f"scratch kind {kind!r} is not one of {', '.join(SCRATCH_KINDS)}")
    return tempfile.TemporaryDirectory(prefix=f"aifabric-{kind}-{os.getpid()}-")


def owner_of_scratch(name: str) -> int | None:
    """The pid in a scratch folder's name, or None if not ours."""
    found = SCRATCH_RE.match(name)
    return int(found.group(1)) if found else None
