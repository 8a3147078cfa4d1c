"""aifabric: a packet-level emulator of AI-cluster networks.

Subpackages, in the order data flows through them: ``topology`` (pure data),
``p4`` (the P4 toolchain of the built-in target), ``targets`` (switch
processes), ``network`` (Mininet), ``control`` (P4Runtime controller),
``traffic`` (RoCEv2 hosts and collectives), ``measure``, ``scenario`` and
``cli``. See DESIGN.md for the dependency rules between them.
"""

__version__ = "0.1.0"
