"""Scenario files: read (with line numbers for errors), check, resolve.

:func:`load_scenario` reads a YAML file the way topology files are read (the
key lines come from the YAML node tree; a key given twice is an error), then
checks in this order, stopping at the first problem, which becomes one
:class:`ScenarioError` line naming the file, the line and the key:

1. the shape, against the JSON Schema of :mod:`.schema`;
2. the topology: a file path relative to the scenario file (its own errors
   name that file) or an inline mapping (errors name ``topology.KEY`` here);
3. units and names (:mod:`.parse`): sizes, durations, rates, thresholds;
   GPUs, switches, ports, links, capture points of that topology;
4. checks across keys (:mod:`.checks`);
5. ``time_scale`` (:mod:`.scale`): the scenario returned is the emulated one,
   rates ÷ k and times × k, the file's own values in ``.written``; a link
   too fast to emulate is an error naming ``time_scale``. On the ``sim``
   target (virtual time) nothing is scaled: the scenario runs as written,
   with ``time_scale`` recorded as 1 (:func:`~.scale.native`). ``auto``
   (in the file, or given as ``time_scale_override``, the CLI's
   ``--time-scale``) is chosen from the load the scenario will offer
   against this machine's per-frame cost (:mod:`emulator.budget`), after every
   other check; the choice and its budget are kept in
   ``Scenario.time_scale_choice``.
"""

from __future__ import annotations

import os
from os import PathLike
from pathlib import Path
from typing import Any, Mapping

from emulator.scenario import checks, jobs_parse, parse, parse_collectives, scale
from emulator.scenario.errors import KeyLines, ScenarioError, Where
from emulator.scenario.schema import TARGETS, check_schema
from emulator.scenario.spec import Scenario
from emulator.topology import Topology, TopologyError, build_topology, load_topology, spec_from_dict
from emulator.topology.loader import read_yaml_file


def load_scenario(path: str | PathLike[str], target_override: str | None = None,
                  time_scale_override: float | str | None = None) -> Scenario:
    """Read, check and resolve the scenario file at ``path``.

    ``target_override`` (the CLI's ``--target``) replaces the file's target,
    ``time_scale_override`` (``--time-scale``: a number >= 1 or ``auto``) its
    time scale.
    """
    source = str(path)
    try:
        data, lines = read_yaml_file(path, "scenario")
    except TopologyError as exc:  # the shared YAML reader speaks of topologies' errors
        raise ScenarioError(str(exc)) from None
    if time_scale_override is not None and isinstance(data, dict):
        data = {**data, "time_scale": time_scale_override}
    return scenario_from_dict(data, source, Path(path).parent, target_override, lines)


def scenario_from_dict(data: object, source: str = "<dict>",
                       base_dir: str | PathLike[str] = ".",
                       target_override: str | None = None,
                       lines: KeyLines | None = None) -> Scenario:
    """Check a scenario mapping (as a file holds it) and resolve it.

    ``base_dir`` is where a topology path is relative to; ``source`` and
    ``lines`` (key path → YAML line) only shape error messages.
    """
    where = Where(source, lines)
    if not isinstance(data, Mapping):
        found = "an empty document" if data is None else (
            "a list" if isinstance(data, list) else repr(data))
        raise ScenarioError(f"{source}: a scenario is a mapping of keys (name, topology, "
                            f"duration, workload, ...), not {found}")
    bad_keys = [key for key in data if not isinstance(key, str)]
    if bad_keys:
        raise where.error([str(bad_keys[0])], "keys must be names (strings)")
    data = _whole_numbers(data)
    check_schema(data, where)
    if target_override is not None and target_override not in TARGETS:
        raise ScenarioError(f"target {target_override!r} is not known; use one of "
                            + ", ".join(TARGETS))
    topology, topology_file = _topology(data["topology"], where, Path(base_dir))
    ctx = parse.Context(where, topology, target_override or data.get("target", Scenario.target))
    switches = parse.switch_settings(ctx, data.get("switches", {}))
    workload = data["workload"]
    scenario = Scenario(
        name=data["name"],
        source=source,
        topology=topology,
        topology_file=topology_file,
        duration_ns=parse.duration(ctx, data["duration"], ["duration"], positive=True),
        description=data.get("description", ""),
        expect=data.get("expect", ""),
        target=target_override or data.get("target", Scenario.target),
        seed=data.get("seed", Scenario.seed),
        time_scale=1 if data.get("time_scale") == scale.AUTO
        else data.get("time_scale", Scenario.time_scale),
        switches=switches,
        hosts=parse.host_settings(ctx, data.get("hosts", {})),
        flows=parse.flows(ctx, workload.get("flows", []), switches.priorities),
        generators=parse.generators(ctx, workload.get("generators", []), switches.priorities),
        collectives=parse_collectives.collectives(ctx, workload.get("collectives", []),
                                                  switches.priorities),
        jobs=jobs_parse.jobs(ctx, workload.get("jobs", []), switches.priorities, base_dir,
                             data.get("seed", Scenario.seed)),
        events=parse.events(ctx, data.get("events", [])),
        capture=parse.capture(ctx, data.get("capture")),
        expect_checks=parse.expect_checks(ctx, data.get("expect_checks", [])),
    )
    checked = checks.check_scenario(scenario, where)
    if checked.target == "sim":
        return scale.native(checked)
    return scale.emulated(scale.with_choice(checked, data.get("time_scale")), where)


def _whole_numbers(value: Any) -> Any:
    """``4.0`` → ``4`` everywhere: YAML floats that are whole numbers count as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


def _topology(raw: str | Mapping[str, Any], where: Where,
              base_dir: Path) -> tuple[Topology, str | None]:
    if isinstance(raw, str):
        path = base_dir / raw
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "does not exist"
            raise where.error(["topology"], (
                f"{raw!r} {what} (looked for {path}); give a topology file path relative to "
                f"this scenario file, or the topology mapping itself"))
        return load_topology(path), os.path.normpath(path)
    inner = {key[1:]: line for key, line in where.lines.items()
             if len(key) > 1 and key[0] == "topology"}
    try:
        spec = spec_from_dict(raw, where.source, inner)
    except TopologyError as exc:
        message = str(exc)
        if message.startswith(f"{where.source}: "):  # no line: use the topology key's
            line = where.line(["topology"])
            message = message.replace(f"{where.source}: ", f"{where.source}:{line}: ", 1)
        raise ScenarioError(message.replace(": key '", ": key 'topology.", 1)) from None
    return build_topology(spec), None
