"""The virtual-time target: a whole fabric in one process on one clock.

- :mod:`.engine`: the simulated clock and the one event heap;
- the one event heap itself is
  :mod:`emulator.targets.builtin.eventheap` (the switch data plane's timers
  use it too; ``eventheap.pyx``, the same in C, where
  :mod:`emulator.speedups` built it);
- :mod:`.links`: links, their ends (the switch ports' and NICs' back ends)
  and the engine components for switches and NIC agents;
- :mod:`.collector`: the garbage collector kept out of a run's way;
- :mod:`.fabric`: a topology's switches, links and agents, programmed by the
  controller over in-process P4Runtime (:mod:`.p4rt`).

The switches, traffic manager, P4 program, controller and NIC agents are
the live target's own; only the clock and the wire are this package's. The
scenario runner for it is :mod:`emulator.run.sim`.
"""
