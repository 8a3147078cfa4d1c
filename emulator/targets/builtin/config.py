"""Port and switch settings of the built-in target, and where they come from.

A :class:`PortConfig` holds what the topology says about a link end and what
P4Runtime cannot set: the port's rate, its propagation delay, the static cap
of its lossy queues, on which priorities it honours PFC and, for the buffer
(:mod:`.mmu`), which of its ingress priority groups are lossless with their
XOFF/XON thresholds and headroom. Every port starts from one default
(command line or the ``default`` object of a port-config file) overridden
per port.

Port-config file (``--port-config FILE.json``)::

    {"default": {"rate_bps": 10e6, "delay_us": 5, "buffer_bytes": 96000},
     "ports": {"1": {"rate_bps": 1e9, "pfc_priorities": [3, 4]},
               "2": {"delay_us": 100}}}

Keys: ``rate_bps`` (0 = unlimited), ``delay_us``, ``buffer_bytes`` (static
cap of each lossy queue of the port, 0 = none: the dynamic threshold of
:mod:`.mmu` alone), ``overhead_bytes`` (bytes added to every frame when
timing its serialisation, 0 by default: the rate counts the L2 frame as the
socket sees it, without FCS, preamble or inter-frame gap; 24 gives Ethernet
line-rate semantics), ``pfc_priorities`` (list of priorities on which a
received PFC frame pauses the port's queues; all eight by default) and
``rx_link`` (false by default; true when the peer hands frames over at the
start of their serialisation, without delay, as a NIC agent does: the
switch then realises that direction of the link too, see :mod:`.dataplane`)
and ``delay_on_link`` (false by default; true when the wire the port sends
into waits out ``delay_us`` itself, as a virtual-time link does: the port
then sends at the end of serialisation, and ``delay_us`` still sizes the
computed headroom).
Buffer keys (:mod:`.mmu`): ``lossless_priorities`` (ingress priority groups
admitted losslessly, PFC generated for them; none by default),
``xoff_bytes``/``xon_bytes`` (static thresholds of a group's shared bytes),
``xoff_alpha`` (> 0: dynamic XOFF at alpha x free shared bytes, XON at that
less ``xoff_bytes - xon_bytes``), ``headroom_bytes`` (per lossless group; 0 =
:func:`~.mmu.headroom_bytes` of the port's rate and delay with a
:data:`~.mmu.DEFAULT_MAX_FRAME_BYTES` frame), ``pfc_quanta`` (pause time of
the XOFF frames) and ``mac`` (source address of the pause frames).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from emulator.targets.builtin.errors import PortConfigError

NUM_PFC_PRIORITIES = 8
# No static cap on a lossy queue: the dynamic threshold decides (.mmu).
DEFAULT_BUFFER_BYTES = 0
DEFAULT_XOFF_BYTES = 30_000
DEFAULT_XON_BYTES = 15_000
ALL_PRIORITIES = frozenset(range(NUM_PFC_PRIORITIES))
PORT_KEYS = ("rate_bps", "delay_us", "buffer_bytes", "overhead_bytes", "pfc_priorities",
             "rx_link", "delay_on_link", "lossless_priorities", "xoff_bytes", "xon_bytes", "xoff_alpha",
             "headroom_bytes", "pfc_quanta", "mac")
_INTEGER_KEYS = ("buffer_bytes", "overhead_bytes", "xoff_bytes", "xon_bytes", "headroom_bytes",
                 "pfc_quanta")


@dataclass(frozen=True)
class PortConfig:
    """Settings of one port; see the module docstring for units."""

    rate_bps: float = 0.0
    delay_us: float = 0.0
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    overhead_bytes: int = 0
    pfc_priorities: frozenset[int] = ALL_PRIORITIES
    rx_link: bool = False
    delay_on_link: bool = False
    lossless_priorities: frozenset[int] = frozenset()
    xoff_bytes: int = DEFAULT_XOFF_BYTES
    xon_bytes: int = DEFAULT_XON_BYTES
    xoff_alpha: float = 0.0
    headroom_bytes: int = 0
    pfc_quanta: int = 0xFFFF
    mac: str = ""

    def __post_init__(self) -> None:
        _check_number("rate_bps", self.rate_bps)
        _check_number("delay_us", self.delay_us)
        _check_number("xoff_alpha", self.xoff_alpha)
        for key in _INTEGER_KEYS:
            _check_number(key, getattr(self, key), integer=True)
        for key in ("pfc_priorities", "lossless_priorities"):
            bad = [p for p in getattr(self, key)
                   if not isinstance(p, int) or not 0 <= p < NUM_PFC_PRIORITIES]
            if bad:
                raise PortConfigError(f"{key}: {bad} not in 0..{NUM_PFC_PRIORITIES - 1}")
        if self.xon_bytes > self.xoff_bytes:
            raise PortConfigError(f"xon_bytes {self.xon_bytes} is above xoff_bytes "
                                  f"{self.xoff_bytes}; XON must be at most XOFF")
        if not 0 < self.pfc_quanta <= 0xFFFF:
            raise PortConfigError(f"pfc_quanta: expected 1..65535, got {self.pfc_quanta}")
        if self.mac and _mac_bytes(self.mac) is None:
            raise PortConfigError(f"mac: expected aa:bb:cc:dd:ee:ff, got {self.mac!r}")

    @property
    def mac_bytes(self) -> bytes:
        return _mac_bytes(self.mac) or bytes(6)

    def updated(self, settings: Mapping[str, Any]) -> "PortConfig":
        """A copy with ``settings`` (a subset of :data:`PORT_KEYS`) applied."""
        unknown = sorted(set(settings) - set(PORT_KEYS))
        if unknown:
            raise PortConfigError(
                f"unknown port setting(s) {', '.join(unknown)}; known: {', '.join(PORT_KEYS)}")
        changes: dict[str, Any] = {}
        for key, value in settings.items():
            if value is None:
                continue
            if key in ("pfc_priorities", "lossless_priorities"):
                changes[key] = _priorities(value, key)
            elif key in _INTEGER_KEYS:
                changes[key] = _integer(key, value)
            elif key in ("rx_link", "delay_on_link"):
                changes[key] = _boolean(key, value)
            elif key == "mac":
                changes[key] = str(value)
            else:
                changes[key] = _float(key, value)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {"rate_bps": self.rate_bps, "delay_us": self.delay_us,
                "buffer_bytes": self.buffer_bytes, "overhead_bytes": self.overhead_bytes,
                "pfc_priorities": sorted(self.pfc_priorities), "rx_link": self.rx_link,
                "delay_on_link": self.delay_on_link,
                "lossless_priorities": sorted(self.lossless_priorities),
                "xoff_bytes": self.xoff_bytes, "xon_bytes": self.xon_bytes,
                "xoff_alpha": self.xoff_alpha, "headroom_bytes": self.headroom_bytes,
                "pfc_quanta": self.pfc_quanta, "mac": self.mac}


def switch_seed(run_seed: int, switch: str) -> int:
    """The seed of one switch's random stream (ECN marking) in a run seeded
    ``run_seed``: stable across runs and processes (not Python's salted
    ``hash``), different per switch. Live switches get it as ``--seed``; the
    virtual-time target gives it to each switch's pipeline."""
    digest = hashlib.sha256(f"{run_seed}/{switch}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass
class SwitchOptions:
    """Switch-wide settings (the target options of ``simple_switch_grpc``
    and ours)."""

    device_id: int = 0
    priority_queues: int = 8
    cpu_port: int | None = None
    # Hand received PFC frames to the P4 program too (the MAC acts on them anyway).
    pfc_to_pipeline: bool = False
    # SCHED_FIFO priority of the process while it stays light (0: normal).
    realtime_priority: int = 0
    # Receive through PACKET_MMAP rings (ports.RawPort); False: recvmsg per frame.
    rx_ring: bool = True
    # Send through PACKET_MMAP rings flushed once a loop turn (off: one send per
    # frame measured cheaper on veths here, see ring.py).
    tx_ring: bool = False
    default_port: PortConfig = field(default_factory=PortConfig)
    port_settings: dict[int, dict[str, Any]] = field(default_factory=dict)
    pcap_dir: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.priority_queues <= NUM_PFC_PRIORITIES:
            raise PortConfigError(
                f"priority_queues must be in 1..{NUM_PFC_PRIORITIES} (standard_metadata.priority "
                f"has 3 bits), got {self.priority_queues}")

    def port_config(self, port: int) -> PortConfig:
        return self.default_port.updated(self.port_settings.get(port, {}))


def load_port_config_file(path: str | Path) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """(default settings, per-port settings) from a port-config JSON file."""
    source = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise PortConfigError(f"{source}: no such file") from None
    except json.JSONDecodeError as exc:
        raise PortConfigError(f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or set(data) - {"default", "ports"}:
        raise PortConfigError(f"{source}: expected an object with keys 'default' and 'ports'")
    default = data.get("default", {})
    ports = data.get("ports", {})
    if not isinstance(default, dict) or not isinstance(ports, dict):
        raise PortConfigError(f"{source}: 'default' and 'ports' must be objects")
    per_port: dict[int, dict[str, Any]] = {}
    for key, settings in ports.items():
        if not isinstance(settings, dict):
            raise PortConfigError(f"{source}: ports.{key} must be an object")
        per_port[_integer(f"{source}: port number", key)] = dict(settings)
    PortConfig().updated(default)  # check now, with the file name in the message
    for port, settings in per_port.items():
        try:
            PortConfig().updated(settings)
        except PortConfigError as exc:
            raise PortConfigError(f"{source}: port {port}: {exc}") from None
    return dict(default), per_port


def parse_port_setting(text: str) -> tuple[int, dict[str, Any]]:
    """``PORT:KEY=VALUE[,KEY=VALUE...]`` (``pfc_priorities`` as ``3+4``)."""
    port_text, sep, rest = text.partition(":")
    if not sep or not rest:
        raise PortConfigError(f"port setting {text!r}: expected PORT:KEY=VALUE[,KEY=VALUE...]")
    port = _integer("port number", port_text)
    settings: dict[str, Any] = {}
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        if not eq:
            raise PortConfigError(f"port setting {text!r}: {part!r} is not KEY=VALUE")
        key = key.strip()
        listed = key in ("pfc_priorities", "lossless_priorities")
        settings[key] = value.replace("+", ",").strip() if listed else value.strip()
    PortConfig().updated(settings)
    return port, settings


def parse_priorities(text: str) -> frozenset[int]:
    """``"3,4"`` or ``"all"`` or ``"none"`` as a set of priorities."""
    return _priorities(text)


def _mac_bytes(text: str) -> bytes | None:
    parts = text.split(":")
    if len(parts) != 6:
        return None
    try:
        out = bytes(int(p, 16) for p in parts)
    except ValueError:
        return None
    return out


def _priorities(value: Any, key: str = "pfc_priorities") -> frozenset[int]:
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "all":
            return ALL_PRIORITIES
        if text in ("", "none"):
            return frozenset()
        value = [v for v in text.replace("+", ",").split(",") if v.strip()]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise PortConfigError(f"{key}: expected a list of priorities, got {value!r}")
    out = frozenset(_integer(key, v) for v in value)
    PortConfig(**{key: out})
    return out


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise PortConfigError(f"{name}: expected an integer, got {value!r}")
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise PortConfigError(f"{name}: expected an integer, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text, 0)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            raise PortConfigError(f"{name}: expected an integer, got {value!r}") from None
        return _integer(name, number)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise PortConfigError(f"{name}: expected an integer, got {value!r}") from None


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise PortConfigError(f"{name}: expected true or false, got {value!r}")


def _float(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise PortConfigError(f"{name}: expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise PortConfigError(f"{name}: expected a number, got {value!r}") from None


def _check_number(name: str, value: Any, integer: bool = False) -> None:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise PortConfigError(f"{name}: expected {'an integer' if integer else 'a number'}, got {value!r}")
    if not value >= 0 or value == float("inf"):
        raise PortConfigError(f"{name}: must be a finite number >= 0, got {value!r}")
