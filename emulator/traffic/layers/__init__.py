"""Scapy layers the project adds for RoCEv2, and 802.1Qbb PFC frame helpers.

One protocol per module: ``reth``, ``deth``, ``immdt``, ``atomic``
(AtomicETH, AtomicAckETH), ``aeth`` (syndrome codes; the layer is Scapy's),
``icrc`` (the invariant CRC), ``pfc``; ``opcodes`` says which headers follow
each BTH opcode. ``scapy.contrib.roce`` provides BTH, AETH and the CNP.
Importing this package binds everything into Scapy (see ``bind``).
"""

from emulator.traffic.layers import bind as _bind  # noqa: F401  (installs the bindings)
