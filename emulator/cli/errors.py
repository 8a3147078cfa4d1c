"""Which exceptions raised by the library are the user's mistake.

Each package keeps its own error base class (``topology`` may import nothing
else of the project); this module is the one place that lists them, so the
CLI can print them as one line and exit with their ``exit_code``.
"""

from __future__ import annotations

import importlib

# (module, class name) of every user-error base class, imported lazily so a
# command that does not need a package does not pay for importing it.
_USER_ERRORS: tuple[tuple[str, str], ...] = (
    ("emulator.topology.errors", "TopologyError"),
    ("emulator.p4.errors", "P4Error"),
    ("emulator.network.errors", "NetworkError"),
    ("emulator.scenario.errors", "ScenarioError"),
    ("emulator.measure.errors", "MeasureError"),
    ("emulator.exercise.errors", "ExerciseError"),
    ("emulator.view.errors", "ViewError"),
    ("emulator.run.mpi", "MpiError"),
    ("emulator.sim.parallel", "RankError"),
)


def user_error_types() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module_name, class_name in _USER_ERRORS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        found.append(getattr(module, class_name))
    return tuple(found)
