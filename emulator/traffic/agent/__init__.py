"""The host NIC agent: RoCEv2 reliable-connected queue pairs, pacing, PFC
honouring, CNP generation and DCQCN, for every NIC of one server.

One agent process per server runs inside the server's network namespace
and drives all its NICs (one per GPU) through raw ``AF_PACKET`` sockets.
The runner starts it and talks to it::

    ip netns exec <ns> python -m emulator.traffic.agent --config agent.json \\
        --stats stats.json --control /run/aifabric/<server>.sock [--duration S]

(or ``aifabric-agent ...``). It prints ``{"event": "ready", ...}`` once its
sockets are open; posts the config's workload; answers JSON-lines requests
on the control socket (``AgentClient`` in :mod:`.control`: ``post``,
``status``, ``completions``, ``stats``, ``stop``); and on SIGTERM/SIGINT, a
``stop`` request or the end of ``--duration`` writes the stats file and
exits 0. Both ends of every queue pair are in the configs (static QP
numbers, no connection set-up). The config format: :mod:`.config`.

The stats file (and the ``stats`` answer): ``nics[]`` with counters, paused
seconds, PFC frames and ``pause_intervals`` ``[start_unix, end_unix]`` per
priority; ``qps[]`` with counters (sums in :mod:`.stats`), ``series``
(payload bytes sent, resent and accepted, CE marks, CNPs sent and received
per time bin of ``bin_s`` from ``start_unix``), DCQCN state and its scaled
parameters, and ``rate_samples`` ``[t_unix, Rc, Rt, α]``; ``messages.sent[]`` (posted,
first packet and last ACK times, ``fct_s``, status) and
``messages.received[]``; the config. Times are Unix seconds.

Modules, each owning one thing:

- :mod:`.config` — JSON config: format, defaults, checks.
- :mod:`.qp` — RC requester (segmentation, PSNs, go-back-N, timeouts) and
  responder (PSN check, ACK/NAK, CNP requests).
- :mod:`.dcqcn` — reaction point (rate, α, increase stages), CNP gate,
  parameter scaling.
- :mod:`.pacing` — virtual-clock pacer (NIC line rate, QP rate).
- :mod:`.pfc` — 802.1Qbb pause state of a NIC.
- :mod:`.storm` — a PFC storm a NIC sends (the control channel's ``pfc_storm``).
- :mod:`.nic` — a NIC: transmit scheduling, receive dispatch.
- :mod:`.agent` — NICs + QPs + workload + timers, clock-agnostic.
- :mod:`.timers` — the timer heap.
- :mod:`.backends` — raw socket and fake NIC I/O.
- :mod:`.scale_up` — a server's scale-up switch timed in the agent (live runs).
- :mod:`.loop` — the real-time event loop (epoll, signals).
- :mod:`.control` — the control channel server and client.
- :mod:`.stats` — counters, their invariants, records, the stats file.
- :mod:`.sim` — agents on a virtual clock joined by fake wires (tests).
- :mod:`.cli` — the command.

Limits: RC SEND and RDMA WRITE only (no READ, atomics, immediate data,
UD); no memory is read or written (payloads are zeros, the responder keeps
counts); no RNR or credit flow control; the host honours PFC and sends it
only as a storm on request (``pfc_storm``), never from its own buffers;
IPv4 only, untagged frames (priority comes from the QP config, the switch
classifies by DSCP).
"""
