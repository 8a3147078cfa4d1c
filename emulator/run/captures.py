"""Packet captures of a run, on either clock: which pcaps each capture point
writes, and the merge at the end.

A switch point's received and sent frames are written by the switch to
two raw pcaps of that port (``--pcap`` on a live switch, the sim port's
taps on the virtual clock) and merged here in time order into
``out/pcaps/<switch>-p<port>.pcap``, the first ``max_packets`` kept
(:func:`collect_captures`). A GPU point is recorded at the NIC: tcpdump in
the server's namespace on a live run (:mod:`.gpu_capture`), the NIC's tap on
the virtual clock, trimmed to ``max_packets`` (:func:`gpu_capture_result`).
Timestamps are the clock's own: Unix time live, simulated time on sim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emulator.measure.inspect import InspectError, read_pcap_frames
from emulator.scenario.spec import Scenario
from emulator.targets.builtin.pcap import PcapWriter


def live_capture_plan(scenario: Scenario, net: Any, out: Path
                      ) -> dict[str, tuple[Path, list[Path]]]:
    """Capture point -> (file to write, the switch's raw pcaps of that port:
    ``<iface>_in.pcap`` and ``<iface>_out.pcap``, see :mod:`emulator.targets.builtin.pcap`)."""
    ifaces = net.switch_interfaces()
    raw = Path(net.workdir) / "pcap"
    plan: dict[str, tuple[Path, list[Path]]] = {}
    for point in scenario.capture.points:
        if point.port is None:
            continue  # a GPU: tcpdump in its namespace (GpuCapture)
        iface = ifaces[point.node][point.port]
        target = out / "pcaps" / f"{point.node}-p{point.port}.pcap"
        plan[str(point)] = (target, [raw / point.node / f"{iface}_{d}.pcap"
                                     for d in ("in", "out")])
    return plan


def sim_capture_plan(scenario: Scenario, out: Path) -> dict[str, tuple[Path, list[Path]]]:
    """Capture point -> (file to write, the raw pcaps of the port's
    received and sent frames) of a virtual-time run's switch points."""
    raw = out / "fabric" / "pcap"
    return {str(point): (out / "pcaps" / f"{point.node}-p{point.port}.pcap",
                         [raw / f"{point.node}-p{point.port}_{d}.pcap" for d in ("in", "out")])
            for point in scenario.capture.points if point.port is not None}


def start_sim_captures(scenario: Scenario, fabric: Any, out: Path) -> None:
    """Switch points get per-port in/out pcaps (merged at the end, as a live
    run's, :func:`sim_capture_plan`); GPU points record at the NIC. Only the
    points ``fabric`` runs (an MPI rank's part). Timestamps: simulated time."""
    plan = sim_capture_plan(scenario, out)
    for point in scenario.capture.points:
        if point.port is None:
            if fabric.is_local(scenario.topology.gpu(point.node).server):
                path = out / "pcaps" / f"{point.node.replace('/', '-')}.pcap"
                path.parent.mkdir(parents=True, exist_ok=True)
                fabric.capture_gpu(point.node, path)
            continue
        if fabric.is_local(point.node):
            sources = plan[str(point)][1]
            sources[0].parent.mkdir(parents=True, exist_ok=True)
            fabric.capture_port(point.node, point.port, *sources)


def collect_captures(plan: dict[str, tuple[Path, list[Path]]], max_packets: int,
                     errors: list[str]) -> dict[str, Any]:
    """Merge each point's received and sent frames in time order into one
    pcap (nanosecond timestamps), keeping the first ``max_packets``."""
    done: dict[str, Any] = {}
    for point, (target, sources) in plan.items():
        frames: list[tuple[int, bytes]] = []
        try:
            for source in sources:
                frames.extend(read_pcap_frames(source))
        except InspectError as exc:
            errors.append(f"capture {point}: {exc}")
            continue
        frames.sort(key=lambda item: item[0])  # stable: in before out at equal times
        target.parent.mkdir(parents=True, exist_ok=True)
        writer = PcapWriter(target)
        for ts, frame in frames[:max_packets]:
            writer.write(frame, ts)
        writer.close()
        done[point] = {"file": str(target.relative_to(target.parent.parent)),
                       "packets": writer.packets, "seen": len(frames),
                       "truncated": len(frames) > max_packets}
    return done


def gpu_capture_result(path: Path, max_packets: int) -> dict[str, Any]:
    """Keep the first ``max_packets`` of a NIC capture, as a live tcpdump ``-c`` does."""
    frames = read_pcap_frames(path)
    if len(frames) > max_packets:
        writer = PcapWriter(path)
        for ts, frame in frames[:max_packets]:
            writer.write(frame, ts)
        writer.close()
    return {"file": str(path.relative_to(path.parent.parent)),
            "packets": min(len(frames), max_packets), "seen": len(frames),
            "truncated": len(frames) > max_packets}
