"""The emulated network: Mininet hosts and switch processes built from a
topology, brought up and torn down as one, and the leftovers of crashed
runs removed.

Modules, each owning one thing:

- :mod:`.plan` — what to configure, from the topology alone (host NICs,
  neighbours, rules and routes; switch ports and their settings);
- :mod:`.naming` — run ids and the names of everything a run creates;
- :mod:`.command` — the switch command line (one shape, both targets);
- :mod:`.nodes`, :mod:`.switches`, :mod:`.bmv2` — Mininet host, link,
  interface and switch classes;
- :mod:`.netlink` — kernel configuration over netlink and ethtool ioctls;
- :mod:`.process` — process identity, namespaces, stopping, ports;
- :mod:`.record` — run records on disk;
- :mod:`.guard` — signals and the switch monitor;
- :mod:`.lifecycle` — :class:`~.lifecycle.NetworkRun`: a network's life
  cycle (run record, nodes, switch start, teardown whatever happens);
- :mod:`.fabric_net` — :class:`FabricNetwork`, a fabric topology's network;
- :mod:`.exercise_net` — :class:`~.exercise_net.ExerciseNetwork`, a p4lang
  tutorials exercise's network (``topology.json``);
- :mod:`.cleanup` — finding and removing crashed runs' leftovers.

Imports :mod:`emulator.topology` and :mod:`emulator.targets` only. Mininet
and pyroute2 are imported by the modules that need them, so the plans and
the command line can be used (and tested) without root.
"""

from emulator.network.errors import (
    FabricInterrupted, NetworkError, SwitchDiedError, SwitchStartError, TeardownError,
)

__all__ = ["FabricInterrupted", "FabricNetwork", "NetworkError", "NetworkOptions",
           "SwitchDiedError", "SwitchStartError", "TeardownError"]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # FabricNetwork pulls in Mininet and pyroute2: import it on first use.
    if name in ("FabricNetwork", "NetworkOptions"):
        from emulator.network import fabric_net

        return getattr(fabric_net, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
