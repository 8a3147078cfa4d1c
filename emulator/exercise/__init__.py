"""Running a p4lang tutorials exercise on built-in switches, as its
``make run`` does with BMv2 (``aifabric exercise DIR``).

- :mod:`.spec` — the exercise directory: Makefile variables, ``topology.json``,
  the programs (pure data, no root);
- :mod:`.build` — compiling the programs into ``build/`` with the names the
  tutorials' files refer to;
- :mod:`.program` — programming a switch from its ``sN-runtime.json`` over
  P4Runtime, as the tutorials' ``simple_controller`` does;
- :mod:`.session` — the whole run: compile, bring the network up
  (:class:`emulator.network.exercise_net.ExerciseNetwork`), run the hosts'
  commands, program the switches, ping check, teardown always.
"""
