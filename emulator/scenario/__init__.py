"""Scenario files: what one experiment runs, checked before anything starts.

A scenario names a topology, the switches' buffers, ECN, PFC and traffic
classes, the hosts' MTU and DCQCN, the traffic (flows and generators),
timed events, packet captures and the expected outcome (see
``scenarios/README.md`` for the format, key by key). Nothing here needs
root or starts anything; :mod:`emulator.run` runs a :class:`Scenario` on
either clock, :mod:`emulator.measure` turns what it measured into results.

- :func:`load_scenario`, :func:`scenario_from_dict` (:mod:`.loader`): read
  and check, raising one-line :class:`ScenarioError`\\ s;
- :data:`SCHEMA` (:mod:`.schema`): the JSON Schema of a file;
- the typed spec (:mod:`.spec`), units (:mod:`.units`) and name patterns
  (:mod:`.names`), parsed by :mod:`.parse` and :mod:`.parse_collectives`,
  checked across keys by :mod:`.checks`;
- :func:`expand_workload` (:mod:`.workload`): generators, collectives and
  jobs to flows; :mod:`.collectives`: a collective's flows and dependent
  messages; jobs (``workload.jobs``): a training step's model and graph
  (:mod:`.jobs_model`, :mod:`.jobs_graph`), serving (:mod:`.jobs_serve`),
  Chakra traces (:mod:`.chakra`), parsed by :mod:`.jobs_parse` into
  :mod:`.jobs_spec`, planned into flows and agent work by :mod:`.jobs_plan`;
- :func:`to_fabric_settings` (:mod:`.fabric`): the controller's settings.
- ``time_scale`` (:mod:`.scale`): a file in data-centre units, emulated
  k times slower; the loader returns the emulated scenario. ``auto`` asks
  :mod:`emulator.budget` for k, from the load the file offers
  (:mod:`.load`).
"""

from emulator.scenario.errors import ScenarioError
from emulator.scenario.fabric import buffer_bytes, to_fabric_settings
from emulator.scenario.loader import load_scenario, scenario_from_dict
from emulator.scenario.schema import SCHEMA
from emulator.scenario.spec import (
    CapturePoint,
    CaptureSpec,
    DcqcnSpec,
    EcnSpec,
    EventSpec,
    ExpectCheck,
    FlowSpec,
    GeneratorSpec,
    HostSettings,
    PfcSpec,
    PortSettings,
    PrioritySpec,
    Scenario,
    SwitchOverride,
    SwitchSettings,
)
from emulator.scenario.units import Threshold
from emulator.scenario.workload import expand_workload

__all__ = [
    "SCHEMA",
    "CapturePoint",
    "CaptureSpec",
    "DcqcnSpec",
    "EcnSpec",
    "EventSpec",
    "ExpectCheck",
    "FlowSpec",
    "GeneratorSpec",
    "HostSettings",
    "PfcSpec",
    "PortSettings",
    "PrioritySpec",
    "Scenario",
    "ScenarioError",
    "SwitchOverride",
    "SwitchSettings",
    "Threshold",
    "buffer_bytes",
    "expand_workload",
    "load_scenario",
    "scenario_from_dict",
    "to_fabric_settings",
]
