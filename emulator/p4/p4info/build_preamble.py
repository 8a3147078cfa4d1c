"""What every P4Info object carries besides its own fields: the preamble
(id, name, alias), annotations (p4c ``Helpers::addAnnotations``: all
structured ones, the unstructured ones p4c does not drop) and
documentation (``@brief``/``@description`` as ``doc``).  Used by the
builder (:mod:`.build`, :mod:`.build_types`)."""

from __future__ import annotations

from typing import Callable

from . import model as m
from .ids import P4InfoError

_ALWAYS_DROPPED = frozenset({"name", "id", "brief", "description"})


def _never(_name: str) -> bool:
    return False


def add_annotations(msg, obj, drop: Callable[[str], bool] = _never) -> None:
    """p4c ``Helpers::addAnnotations``: structured all, unstructured filtered."""
    for sa in getattr(obj, "structured_annotations", ()) or ():
        _structured(sa, msg.structured_annotations.add())
    for ann in getattr(obj, "annotations", ()) or ():
        if ann.name in _ALWAYS_DROPPED or drop(ann.name):
            continue
        msg.annotations.append(ann.render())


def _structured_value(value, expr) -> None:
    if isinstance(value, bool):
        expr.bool_value = value
    elif isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise P4InfoError(
                f"{value}: integer literal in structured annotation must fit in int64"
            )
        expr.int64_value = value
    elif isinstance(value, str):
        expr.string_value = value
    else:
        raise P4InfoError(f"{value!r}: structured annotation expression should be a literal")


def _structured(sa: m.StructuredAnnotation, msg) -> None:
    msg.name = sa.name
    if sa.expressions is not None:
        for v in sa.expressions:
            _structured_value(v, msg.expression_list.expressions.add())
    elif sa.kv_pairs is not None:
        for k, v in sa.kv_pairs:
            kv = msg.kv_pair_list.kv_pairs.add()
            kv.key = k
            _structured_value(v, kv.value)


def add_doc(msg, obj) -> None:
    brief = getattr(obj, "brief", None)
    description = getattr(obj, "description", None)
    if brief is None and description is None:
        return
    if brief is not None:
        msg.doc.brief = brief
    if description is not None:
        msg.doc.description = description


def fill_preamble(msg, pid: int, name: str, alias: str, obj,
                  drop: Callable[[str], bool] = _never) -> None:
    msg.id = pid
    msg.name = name
    msg.alias = alias
    if obj is not None:
        add_annotations(msg, obj, drop)
        add_doc(msg, obj)
