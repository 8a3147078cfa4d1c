"""Topology files: read (with line numbers for errors), check, build, write.

Reading composes the YAML node tree once to learn the line of every key (and
to refuse keys given twice, which PyYAML would otherwise silently merge), then
loads the data; every problem becomes one :class:`TopologyError` line that
names the file and, where it can, the line.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import yaml

from emulator.topology.build import build_topology
from emulator.topology.errors import TopologyError
from emulator.topology.model import Topology
from emulator.topology.spec import KeyLines, TopologySpec, spec_from_dict


def _key_lines(node: yaml.Node, source: str, prefix: tuple[str, ...],
               lines: dict[tuple[str, ...], int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = prefix + (str(key_node.value),)
            line = key_node.start_mark.line + 1
            if path in lines:
                raise TopologyError(
                    f"{source}:{line}: key '{'.'.join(path)}': is given twice "
                    f"(first on line {lines[path]}); keep one"
                )
            lines[path] = line
            _key_lines(value_node, source, path, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault(prefix + (str(index),), item.start_mark.line + 1)
            _key_lines(item, source, prefix + (str(index),), lines)


def parse_yaml(text: str, source: str) -> tuple[Any, KeyLines]:
    """The data of a one-document YAML text and the line of each key path."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot be parsed"
        if exc.problem and exc.context and exc.context.startswith("expected"):
            # e.g. "expected a single document in the stream, but found another document"
            problem = f"{exc.context}, {exc.problem}"
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise TopologyError(f"{where}: not valid YAML: {problem}{column}") from None
    except yaml.YAMLError as exc:
        raise TopologyError(f"{source}: not valid YAML: {' '.join(str(exc).split())}") from None
    lines: dict[tuple[str, ...], int] = {}
    if root is not None:
        _key_lines(root, source, (), lines)
    return data, lines


def read_yaml_file(path: str | PathLike[str], kind: str) -> tuple[object, KeyLines]:
    """Read a YAML file of ``kind`` ("topology", "scenario") with the line
    of every key; unreadable files and bad YAML raise one-line TopologyErrors
    naming the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TopologyError(f"{source}: no such {kind} file") from None
    except IsADirectoryError:
        raise TopologyError(f"{source}: is a directory, not a {kind} file") from None
    except UnicodeDecodeError:
        raise TopologyError(f"{source}: not a text file (UTF-8 YAML expected)") from None
    except OSError as exc:
        raise TopologyError(f"{source}: cannot read: {exc.strerror}") from None
    return parse_yaml(text, source)


def topology_from_dict(data: object, source: str = "<dict>") -> Topology:
    """Check a topology mapping (as a file holds it) and build it."""
    return build_topology(spec_from_dict(data, source))


def load_spec(path: str | PathLike[str]) -> TopologySpec:
    """Read and check a topology file without building it."""
    source = str(path)
    data, lines = read_yaml_file(path, "topology")
    return spec_from_dict(data, source, lines)


def load_topology(path: str | PathLike[str]) -> Topology:
    """Read, check and build the topology file at ``path``."""
    return build_topology(load_spec(path))


def dump_topology(topology: Topology | TopologySpec, path: str | PathLike[str]) -> None:
    """Write the spec of ``topology`` as a topology file that loads back equal."""
    spec = topology.spec if isinstance(topology, Topology) else topology
    text = yaml.safe_dump(spec.to_dict(), sort_keys=False, default_flow_style=None)
    try:
        Path(path).write_text(f"# {spec.name}: {spec.kind} topology written by aifabric\n{text}",
                              encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"{path}: cannot write: {exc.strerror}") from None
