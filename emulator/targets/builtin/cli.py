"""``aifabric-switch``: the built-in switch as a process, with the
command-line shape of BMv2's ``simple_switch_grpc``::

    aifabric-switch [options] [DEVICE_CONFIG] [-- target options]

``-i PORT@IFACE`` (repeatable), ``--device-id``, ``--thrift-port`` (accepted
and ignored: there is no Thrift here), ``--pcap[=DIR]``, ``--log-file``,
``--log-console``, ``--log-level``, ``--no-p4`` and, after ``--`` or not,
``--grpc-server-addr`` (default 127.0.0.1:9559), ``--cpu-port``,
``--priority-queues``. Ours: ``--rt-priority N`` (the data plane at that
real-time priority while it stays light), ``--seed`` (of the program's random stream,
e.g. ECN marking; the network layer gives every switch its own, see
:func:`emulator.network.command.switch_seed`), port settings (``--rate-bps``, ``--delay-us``,
``--buffer-bytes``, ``--overhead-bytes``, ``--pfc-priorities`` for every
port, ``--port-set PORT:KEY=VALUE,...`` for one, ``--port-config FILE.json``;
the command line wins over the file, see :mod:`.config`) and
``--pfc-to-pipeline``.

The process runs until SIGTERM or SIGINT, then stops the data plane and the
gRPC server, flushes captures, closes sockets and exits 0.
:func:`run_switch` is the same thing as a function (with an optional
ready-made pipeline, pipeline loader and gRPC service hooks), for launchers
and tests.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any, Callable, Sequence

from emulator.fidelity.process import tighten_timer_slack
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.targets.builtin.config import (
    PORT_KEYS, SwitchOptions, load_port_config_file, parse_port_setting,
)
from emulator.targets.builtin.errors import SwitchError
from emulator.targets.builtin.loader import PipelineLoader, load_device_config
from emulator.targets.builtin.queue_control import add_queue_control
from emulator.targets.builtin.server import ControlServer, ServiceHook
from emulator.targets.builtin.switch import Switch

PROG = "aifabric-switch"
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
# The gRPC services every switch process serves (the P4Runtime hook joins here).
DEFAULT_SERVICE_HOOKS: tuple[ServiceHook, ...] = (add_queue_control,)
LOG_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
              "warn": logging.WARNING, "warning": logging.WARNING, "error": logging.ERROR,
              "critical": logging.CRITICAL, "off": logging.CRITICAL + 10}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="The aifabric built-in P4 switch.")
    p.add_argument("device_config", nargs="?", help="device config to load at start")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach network interface IFACE as port PORT (repeatable)")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--thrift-port", type=int, help="accepted for BMv2 compatibility; ignored")
    p.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDR,
                   help=f"gRPC address, host:port or unix:PATH (default {DEFAULT_GRPC_ADDR})")
    p.add_argument("--cpu-port", type=int, help="port number of the CPU port (packet-in/out)")
    p.add_argument("--pcap", nargs="?", const=".", metavar="DIR",
                   help="write <iface>_in.pcap/<iface>_out.pcap per port in DIR (default .)")
    p.add_argument("--log-file", help="log to this file")
    p.add_argument("--log-console", action="store_true", help="log to stderr (default without --log-file)")
    p.add_argument("--log-level", default="info", choices=sorted(LOG_LEVELS))
    p.add_argument("--priority-queues", type=int, default=8, help="queues per port (1..8)")
    p.add_argument("--no-p4", action="store_true", help="start without a program (drops everything)")
    p.add_argument("--rate-bps", type=float, help="default port rate, bit/s (0 = unlimited)")
    p.add_argument("--delay-us", type=float, help="default port propagation delay, microseconds")
    p.add_argument("--buffer-bytes", type=int, help="default capacity of each queue, bytes")
    p.add_argument("--overhead-bytes", type=int, help="bytes added per frame when timing it")
    p.add_argument("--pfc-priorities", help="priorities honouring PFC by default: 3,4 | all | none")
    p.add_argument("--port-set", action="append", default=[], metavar="PORT:KEY=VALUE[,...]",
                   help=f"settings of one port; keys: {', '.join(PORT_KEYS)}")
    p.add_argument("--port-config", metavar="FILE.json", help="port settings file")
    p.add_argument("--rt-priority", type=int, default=0, metavar="N",
                   help="run the data plane at SCHED_FIFO priority N while it stays light "
                        "(default 0: normal scheduling)")
    p.add_argument("--no-rx-ring", action="store_true",
                   help="read frames with recvmsg, one system call each, instead of a "
                        "PACKET_MMAP ring")
    p.add_argument("--tx-ring", action="store_true",
                   help="send frames through a PACKET_MMAP ring flushed once a loop turn "
                        "instead of one send each (measured slower on veths)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the P4 program's random stream (default 0)")
    p.add_argument("--pfc-to-pipeline", action="store_true",
                   help="also give received PFC frames to the P4 program")
    return p


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse, accepting simple_switch_grpc's ``--`` before target options."""
    args = list(argv)
    if "--" in args:
        args.remove("--")
    return build_parser().parse_args(args)


def switch_options(args: argparse.Namespace) -> SwitchOptions:
    default: dict[str, Any] = {}
    per_port: dict[int, dict[str, Any]] = {}
    if args.port_config:
        default, per_port = load_port_config_file(args.port_config)
    for key in ("rate_bps", "delay_us", "buffer_bytes", "overhead_bytes", "pfc_priorities"):
        value = getattr(args, key)
        if value is not None:
            default[key] = value
    for text in args.port_set:
        port, settings = parse_port_setting(text)
        per_port.setdefault(port, {}).update(settings)
    base = SwitchOptions().default_port.updated(default)
    pcap_dir = None
    if args.pcap is not None:
        pcap_dir = os.path.abspath(args.pcap)
        os.makedirs(pcap_dir, exist_ok=True)
    if not 0 <= args.rt_priority <= 99:
        raise SwitchError(f"--rt-priority {args.rt_priority}: not in 0..99")
    return SwitchOptions(device_id=args.device_id, priority_queues=args.priority_queues,
                         cpu_port=args.cpu_port, pfc_to_pipeline=args.pfc_to_pipeline,
                         realtime_priority=args.rt_priority, rx_ring=not args.no_rx_ring,
                         tx_ring=args.tx_ring,
                         default_port=base, port_settings=per_port, pcap_dir=pcap_dir)


def parse_interfaces(specs: Sequence[str]) -> list[tuple[int, str]]:
    out = []
    for spec in specs:
        port_text, sep, iface = spec.partition("@")
        if not sep or not iface or not port_text.strip().isdigit():
            raise SwitchError(f"interface {spec!r}: expected PORT@IFACE, e.g. 1@veth1")
        out.append((int(port_text), iface))
    ports = [p for p, _ in out]
    if len(set(ports)) != len(ports):
        raise SwitchError(f"a port number is given twice in {list(specs)}")
    return out


def setup_logging(args: argparse.Namespace, device_id: int) -> logging.Logger:
    logger = logging.getLogger("aifabric.switch")
    logger.setLevel(LOG_LEVELS[args.log_level])
    logger.propagate = False
    fmt = logging.Formatter(f"%(asctime)s.%(msecs)03d [{PROG} {device_id}] %(levelname)s "
                            "%(message)s", "%H:%M:%S")
    handlers: list[logging.Handler] = []
    if args.log_file:
        handlers.append(logging.FileHandler(args.log_file))
    if args.log_console or not args.log_file:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in logger.handlers[:]:
        logger.removeHandler(handler)
        handler.close()
    for handler in handlers:
        handler.setFormatter(fmt)
        logger.addHandler(handler)
    return logger


def run_switch(argv: Sequence[str], *, pipeline: V1ModelPipeline | None = None,
               loader: PipelineLoader | None = None,
               service_hooks: Sequence[ServiceHook] = DEFAULT_SERVICE_HOOKS,
               ready: Callable[[Switch, ControlServer], None] | None = None,
               p4runtime: bool = True) -> int:
    """Run a switch process until SIGTERM/SIGINT; returns the exit status.

    ``pipeline`` (already built) takes the place of the device config;
    ``loader`` builds one from the device config (default: the P4 front end,
    see :mod:`.loader`), at start and for P4Runtime's
    SetForwardingPipelineConfig (``p4runtime=False`` leaves the P4Runtime
    service out); ``ready(switch, server)`` is called once the switch
    forwards and the gRPC server listens. Raises :class:`SwitchError` (and
    subclasses) for bad settings. Must run in the main thread (signals).
    """
    args = parse_args(argv)
    options = switch_options(args)
    interfaces = parse_interfaces(args.interface)
    if pipeline is None and args.device_config is None and not args.no_p4:
        raise SwitchError("give a device config, or --no-p4 to start without a program")
    log = setup_logging(args, options.device_id)
    tighten_timer_slack()  # before the data-plane thread starts: it inherits the slack
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGTERM, signal.SIGINT)}
    switch = Switch(options, logger=log)
    server: ControlServer | None = None
    try:
        if pipeline is None and args.device_config is not None:
            pipeline = load_device_config(args.device_config, loader,
                                          priority_queues=options.priority_queues,
                                          seed=args.seed)
        for number, iface in interfaces:
            switch.open_interface(number, iface)
        switch.set_pipeline(pipeline)
        hooks = list(service_hooks)
        if p4runtime:
            hooks.append(p4runtime_hook(loader, options.priority_queues, args.seed))
        server = ControlServer(switch, args.grpc_server_addr, hooks)
        switch.start()
        server.start()
        log.info("switch %d ready: %d port(s), gRPC on %s", options.device_id,
                 len(interfaces), args.grpc_server_addr)
        if ready is not None:
            ready(switch, server)
        while not stop.is_set():
            stop.wait(1.0)
        log.info("stopping")
    finally:
        if server is not None:
            server.stop()
        switch.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def p4runtime_hook(loader: PipelineLoader | None, priority_queues: int,
                   seed: int = 0) -> ServiceHook:
    """The P4Runtime service for a switch: pipelines pushed over P4Runtime
    are built by the same loader (and seed) as a device config given at start."""
    from emulator.targets.p4runtime.server import add_p4runtime_service

    def load(p4info: object, config: bytes) -> V1ModelPipeline:
        return load_device_config(config, loader, priority_queues=priority_queues, seed=seed)

    def hook(server: Any, switch: Switch) -> object:
        return add_p4runtime_service(server, switch, switch.options.device_id, load,
                                     cpu_port=switch.options.cpu_port)
    return hook


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run_switch(sys.argv[1:] if argv is None else argv)
    except SwitchError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
