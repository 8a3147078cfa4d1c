"""Switch targets: processes that run one P4 program on a set of ports.

Two targets, one interface. Both are started with the command-line shape of
BMv2's ``simple_switch_grpc`` (``-i PORT@IFACE``, ``--device-id``,
``--grpc-server-addr``, ``--cpu-port``, ``--pcap``, ``--log-file``, target
options after ``--``) and are programmed over P4Runtime, never by import:

- :mod:`emulator.targets.builtin` — the project's own switch
  (``aifabric-switch``): AF_PACKET ports, the P4 executor of
  :mod:`emulator.p4.exec`, a traffic manager with per-port per-priority byte
  queues, line-rate serialisation, link delay and PFC pause timers below P4,
  and a gRPC server (P4Runtime, plus ``aifabric.QueueControl`` for what
  P4Runtime cannot set: port rate, delay, buffer, PFC enable, queue stats).
- ``bmv2`` — launches ``simple_switch_grpc`` where it is installed.

This package imports :mod:`emulator.p4` and nothing else of the project.
"""
