"""A p4lang tutorials exercise directory, read as its ``make run`` would:
the Makefile's variables, ``topology.json`` and the programs to compile.
Pure data, no root.

- **Makefile**: ``TOPO`` (default ``topology.json``) and ``DEFAULT_PROG``
  (default: the one ``.p4`` file in the directory) are read from plain
  ``NAME = value`` lines (also ``:=``, ``?=``); everything else is ignored.
- **topology.json**: ``hosts`` (name → ``ip`` as ``A.B.C.D/len``, ``mac``,
  optional ``commands`` run in the host's shell), ``switches`` (name →
  optional ``runtime_json``, ``program`` (a compiled JSON that switch starts
  with instead of the default), ``cpu_port``, ``priority_queues``,
  ``cli_input``), ``links`` (``[a, b]`` or ``[a, b, latency, bandwidth]``;
  an end is a host name or ``sN-pK``, port K of switch sN; latency as a
  number of ms or a string with ``us``, ``ms`` or ``s`` (a bare number
  string is µs, as tc reads it); bandwidth in Mbit/s). Paths are relative
  to the exercise directory, where the tutorials run.

Every mistake is one :class:`ExerciseError` line naming the file and key
and what is allowed.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.exercise.errors import ExerciseError

DEFAULT_TOPO = "topology.json"
TOPOLOGY_KEYS = ("hosts", "switches", "links")
HOST_KEYS = ("ip", "mac", "commands")
SWITCH_KEYS = ("runtime_json", "program", "cpu_port", "priority_queues", "cli_input")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)\s*(.*?)\s*$")
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
_PORT_END = re.compile(r"^(.+)-p(\d+)$")
_LATENCY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|usec|ms|msec|s|sec)?\s*$")
_LATENCY_US = {None: 1.0, "us": 1.0, "usec": 1.0, "ms": 1e3, "msec": 1e3, "s": 1e6, "sec": 1e6}
MAX_PORT = 510


@dataclass(frozen=True)
class HostSpec:
    name: str
    ip: str           # address only
    prefix_len: int
    mac: str
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class SwitchSpec:
    name: str
    index: int        # position in topology.json: device id, gRPC port 50051 + index
    runtime_json: str | None = None
    program: str | None = None
    cpu_port: int | None = None
    priority_queues: int | None = None
    cli_input: str | None = None


@dataclass(frozen=True)
class LinkSpec:
    """One link; ``host`` set for a host link (its switch end is
    ``switch_b``/``port_b``), else two switch ports."""

    switch_b: str
    port_b: int
    host: str | None = None
    switch_a: str | None = None
    port_a: int | None = None
    delay_us: float = 0.0
    rate_bps: int = 0  # 0: not limited


@dataclass(frozen=True)
class Topology:
    path: Path
    hosts: tuple[HostSpec, ...]
    switches: tuple[SwitchSpec, ...]
    links: tuple[LinkSpec, ...]

    def switch(self, name: str) -> SwitchSpec:
        for switch in self.switches:
            if switch.name == name:
                return switch
        raise ExerciseError(f"no switch {name!r} (switches: {', '.join(s.name for s in self.switches)})")

    def ports(self, switch: str) -> list[int]:
        out = []
        for link in self.links:
            if link.switch_b == switch:
                out.append(link.port_b)
            if link.switch_a == switch and link.port_a is not None:
                out.append(link.port_a)
        return sorted(out)


@dataclass(frozen=True)
class Exercise:
    """An exercise as ``make run`` sees it: its directory, topology file
    and programs (the ``.p4`` files to compile, and the default one)."""

    directory: Path
    topology_path: Path
    programs: tuple[Path, ...]
    default_program: Path
    makefile_vars: dict[str, str] = field(default_factory=dict)


# ---- the Makefile ---------------------------------------------------------------------------
def makefile_vars(directory: Path) -> dict[str, str]:
    """Plain ``NAME = value`` assignments of ``directory/Makefile`` (none if
    there is no Makefile). Recipe lines (starting with a tab) are skipped."""
    path = directory / "Makefile"
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ExerciseError(f"{path}: {exc.strerror}") from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("\t") or line.lstrip().startswith("#"):
            continue
        found = _ASSIGN.match(line.split("#", 1)[0])
        if found:
            out[found.group(1)] = found.group(2)
    return out


def read_exercise(directory: str | Path, program: str | Path | None = None,
                  topo: str | Path | None = None) -> Exercise:
    """What ``make run`` would use in ``directory``; ``program`` and ``topo``
    (relative to the current directory) override the Makefile's choices."""
    root = Path(directory)
    if not root.is_dir():
        raise ExerciseError(f"{root}: not a directory (give an exercise directory, "
                            "e.g. tutorials/exercises/basic)")
    variables = makefile_vars(root)
    topology_path = Path(topo) if topo is not None else root / variables.get("TOPO", DEFAULT_TOPO)
    if not topology_path.is_file():
        where = "--topo" if topo is not None else (
            f"{root / 'Makefile'} (TOPO)" if "TOPO" in variables else f"{root}")
        raise ExerciseError(f"{topology_path}: no such file (from {where})")
    own = sorted(root.glob("*.p4"))
    if program is not None:
        chosen = Path(program)
        if not chosen.is_file():
            raise ExerciseError(f"--program {chosen}: no such file")
        programs = [p for p in own if p.stem != chosen.stem] + [chosen]
        default = chosen
        named = variables.get("DEFAULT_PROG")
        if named and named != chosen.name and (root / named).is_file():
            default = root / named  # --program replaces the program of its name only
    else:
        programs = own
        named = variables.get("DEFAULT_PROG")
        if named:
            default = root / named
            if not default.is_file():
                raise ExerciseError(f"{root / 'Makefile'}: DEFAULT_PROG {named}: no such file")
        elif len(own) == 1:
            default = own[0]
        elif not own:
            raise ExerciseError(f"{root}: no .p4 program (give one with --program FILE.p4)")
        else:
            raise ExerciseError(f"{root}: several .p4 programs ({', '.join(p.name for p in own)}); "
                                "set DEFAULT_PROG in the Makefile or give --program FILE.p4")
    if default not in programs:
        programs.append(default)
    return Exercise(root, topology_path, tuple(programs), default, variables)


# ---- topology.json --------------------------------------------------------------------------
def load_topology(path: str | Path) -> Topology:
    """Read and check a tutorials ``topology.json``."""
    source = Path(path)
    try:
        data = json.loads(source.read_text())
    except FileNotFoundError:
        raise ExerciseError(f"{source}: no such file") from None
    except json.JSONDecodeError as exc:
        raise ExerciseError(f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExerciseError(f"{source}: cannot read: {exc}") from None
    where = str(source)
    _keys(data, TOPOLOGY_KEYS, where)
    for key in TOPOLOGY_KEYS:
        if key not in data:
            raise ExerciseError(f"{where}: missing key {key!r}")
    hosts = tuple(_host(name, value, f"{where}: hosts.{name}")
                  for name, value in _object(data["hosts"], f"{where}: hosts").items())
    switches = tuple(_switch(name, i, value, f"{where}: switches.{name}") for i, (name, value)
                     in enumerate(_object(data["switches"], f"{where}: switches").items()))
    if not isinstance(data["links"], list):
        raise ExerciseError(f"{where}: links must be a list of [a, b] or [a, b, latency, bandwidth]")
    host_names = {h.name for h in hosts}
    switch_names = {s.name for s in switches}
    overlap = host_names & switch_names
    if overlap:
        raise ExerciseError(f"{where}: {sorted(overlap)[0]!r} is both a host and a switch")
    links = tuple(_link(raw, host_names, switch_names, f"{where}: links[{i}]")
                  for i, raw in enumerate(data["links"]))
    _check_wiring(hosts, links, where)
    return Topology(source, hosts, switches, links)


def _keys(obj: Any, allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(obj, dict):
        raise ExerciseError(f"{where}: must be an object")
    for key in obj:
        if key not in allowed:
            raise ExerciseError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ExerciseError(f"{where}: must be an object of name: settings")
    return value


def _host(name: str, value: Any, where: str) -> HostSpec:
    _keys(value, HOST_KEYS, where)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,9}", name):
        raise ExerciseError(f"{where}: host name {name!r}: use a letter, then up to 9 letters, "
                            "digits or _ (e.g. h1)")
    ip_text = value.get("ip")
    try:
        interface = ipaddress.IPv4Interface(ip_text) if isinstance(ip_text, str) else None
    except ValueError:
        interface = None
    if interface is None or "/" not in ip_text:
        raise ExerciseError(f"{where}.ip: {ip_text!r} is not an IPv4 address with a prefix "
                            "length (e.g. 10.0.1.1/24)")
    mac = value.get("mac")
    if not isinstance(mac, str) or not _MAC.match(mac):
        raise ExerciseError(f"{where}.mac: {mac!r} is not a MAC address (e.g. 08:00:00:00:01:11)")
    commands = value.get("commands", [])
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise ExerciseError(f"{where}.commands: must be a list of shell commands")
    return HostSpec(name, str(interface.ip), interface.network.prefixlen, mac.lower(),
                    tuple(commands))


def _switch(name: str, index: int, value: Any, where: str) -> SwitchSpec:
    _keys(value, SWITCH_KEYS, where)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,9}", name):
        raise ExerciseError(f"{where}: switch name {name!r}: use a letter, then up to 9 letters, "
                            "digits or _ (e.g. s1)")
    files = {}
    for key in ("runtime_json", "program", "cli_input"):
        text = value.get(key)
        if text is not None and (not isinstance(text, str) or not text):
            raise ExerciseError(f"{where}.{key}: must be a file name")
        files[key] = text
    numbers = {}
    for key, low, high in (("cpu_port", 1, MAX_PORT), ("priority_queues", 1, 8)):
        raw = value.get(key)
        if raw is None:
            numbers[key] = None
            continue
        try:
            number = int(raw)  # the tutorials write "510" as a string
        except (TypeError, ValueError):
            number = None
        if number is None or isinstance(raw, bool) or not low <= number <= high:
            raise ExerciseError(f"{where}.{key}: {raw!r}: use a number {low}..{high}")
        numbers[key] = number
    return SwitchSpec(name, index, files["runtime_json"], files["program"], numbers["cpu_port"],
                      numbers["priority_queues"], files["cli_input"])


def _end(text: Any, hosts: set[str], switches: set[str], where: str) -> tuple[str, int | None]:
    if isinstance(text, str):
        if text in hosts:
            return text, None
        found = _PORT_END.match(text)
        if found and found.group(1) in switches:
            port = int(found.group(2))
            if not 1 <= port <= MAX_PORT:
                raise ExerciseError(f"{where}: {text!r}: switch ports are 1..{MAX_PORT}")
            return found.group(1), port
        if text in switches:
            raise ExerciseError(f"{where}: {text!r}: name the switch port, e.g. {text}-p1")
    raise ExerciseError(f"{where}: {text!r} is neither a host ({', '.join(sorted(hosts))}) "
                        f"nor a switch port (sN-pK, switches: {', '.join(sorted(switches))})")


def parse_latency_us(value: Any, where: str) -> float:
    """A link latency: a number of ms, or a string with a unit (a bare number
    string is µs, as tc reads it)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ExerciseError(f"{where}: latency {value!r} is negative")
        return float(value) * 1e3
    found = _LATENCY.match(value) if isinstance(value, str) else None
    if found is None:
        raise ExerciseError(f"{where}: latency {value!r}: use a number of ms or e.g. '5ms', "
                            "'100us', '1s'")
    return float(found.group(1)) * _LATENCY_US[found.group(2)]


def _link(raw: Any, hosts: set[str], switches: set[str], where: str) -> LinkSpec:
    if not isinstance(raw, list) or not 2 <= len(raw) <= 4:
        raise ExerciseError(f"{where}: a link is [a, b] or [a, b, latency, bandwidth]")
    (a, port_a), (b, port_b) = (_end(end, hosts, switches, where) for end in raw[:2])
    delay_us = parse_latency_us(raw[2], where) if len(raw) > 2 else 0.0
    rate_bps = 0
    if len(raw) > 3 and raw[3] is not None:
        bandwidth = raw[3]
        if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) or bandwidth <= 0:
            raise ExerciseError(f"{where}: bandwidth {bandwidth!r}: use a number of Mbit/s above 0")
        rate_bps = int(round(bandwidth * 1e6))
    if port_a is None and port_b is None:
        raise ExerciseError(f"{where}: {a} and {b} are both hosts; hosts connect to switches")
    if port_a is None:
        return LinkSpec(b, port_b, host=a, delay_us=delay_us, rate_bps=rate_bps)  # type: ignore[arg-type]
    if port_b is None:
        return LinkSpec(a, port_a, host=b, delay_us=delay_us, rate_bps=rate_bps)
    return LinkSpec(b, port_b, switch_a=a, port_a=port_a, delay_us=delay_us, rate_bps=rate_bps)


def _check_wiring(hosts: tuple[HostSpec, ...], links: tuple[LinkSpec, ...], where: str) -> None:
    used: dict[tuple[str, int], int] = {}
    linked: dict[str, int] = {}
    for i, link in enumerate(links):
        ends = [(link.switch_b, link.port_b)]
        if link.switch_a is not None and link.port_a is not None:
            ends.append((link.switch_a, link.port_a))
        for end in ends:
            if end in used:
                raise ExerciseError(f"{where}: links[{i}]: port {end[1]} of {end[0]} is already "
                                    f"used by links[{used[end]}]")
            used[end] = i
        if link.host is not None:
            if link.host in linked:
                raise ExerciseError(f"{where}: links[{i}]: host {link.host} already has a link "
                                    f"(links[{linked[link.host]}]); a host has one, eth0")
            linked[link.host] = i
    for host in hosts:
        if host.name not in linked:
            raise ExerciseError(f"{where}: hosts.{host.name} has no link")
