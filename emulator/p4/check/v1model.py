"""Rules the v1model architecture and p4c's BMv2 back end (``p4c-bm2-ss``,
``backends/bmv2/simple_switch``) add on top of the language, checked once the
``V1Switch`` package is known:

- ``clone``/``clone_preserving_field_list`` with ``I2E`` only in ingress and
  ``E2E`` only in egress, the clone type a constant;
- ``resubmit_preserving_field_list`` only in ingress,
  ``recirculate_preserving_field_list`` only in egress, their field-list
  index a constant;
- ``verify`` only in parsers (p4c front end).

Everything reachable from a package block counts as "in" it: its body,
its actions and tables, the sub-blocks it applies and the functions called.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

from emulator.p4 import ir
from emulator.p4.check.context import Diagnostics
from emulator.p4.types import EnumType

V1SWITCH_ROLES = ("parser", "verifyChecksum", "ingress", "egress", "computeChecksum", "deparser")
ONLY_IN = {"resubmit_preserving_field_list": "ingress", "recirculate_preserving_field_list": "egress"}


def check_v1model(package: ir.Package, diags: Diagnostics) -> None:
    if package.type_name != "V1Switch":
        return
    for role, block in zip(V1SWITCH_ROLES, package.blocks):
        for call in _extern_calls(block):
            _check_call(call, role, diags)


def _check_call(call: ir.ExternCall, role: str, diags: Diagnostics) -> None:
    if call.target is not None:
        return
    name = call.method
    if name == "verify" and role != "parser":
        diags.error(call.loc, "verify may only be called in a parser")
    elif name in ONLY_IN:
        if role != ONLY_IN[name]:
            diags.error(call.loc, f"{name} can only be called in {ONLY_IN[name]} on BMv2")
        elif not isinstance(call.args[0], ir.Const):
            diags.error(call.loc, f"{name}: the field list index must be a constant")
    elif name in ("clone", "clone_preserving_field_list"):
        kind = call.args[0]
        if not (isinstance(kind, ir.Const) and isinstance(kind.type, EnumType)):
            diags.error(call.loc, f"{name}: the clone type must be a constant on BMv2")
            return
        member = kind.type.members[int(kind.value)]  # type: ignore[call-overload]
        want = "ingress" if member == "I2E" else "egress"
        if role != want:
            diags.error(call.loc, f"{name}(CloneType.{member}, ...) can only be called in {want}")
        if name == "clone_preserving_field_list" and not isinstance(call.args[2], ir.Const):
            diags.error(call.loc, f"{name}: the field list index must be a constant")


def _extern_calls(block: ir.Control | ir.Parser) -> Iterator[ir.ExternCall]:
    seen: set[int] = set()
    todo: list[object] = [block]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ir.ExternCall):
            yield node
        todo.extend(_children(node))


def _children(node: object) -> list[object]:
    if isinstance(node, (list, tuple)):
        return list(node)
    if isinstance(node, dict):
        return list(node.values())
    if isinstance(node, ir.Control):
        return [node.locals, node.body, node.actions, node.tables, node.sub_blocks]
    if isinstance(node, ir.Parser):
        return [node.locals, node.states, node.sub_blocks]
    if isinstance(node, ir.Table):
        return [[r.action for r in node.actions], [r.args for r in node.actions],
                node.default_action.action, [e.action.action for e in node.entries],
                [k.expr for k in node.keys]]
    if isinstance(node, ir.TableApplyResult):
        return [node.table]
    if isinstance(node, (ir.Action, ir.Function)):
        return [node.body]
    if isinstance(node, ir.ParserState):
        return [node.stmts, node.transition]
    if isinstance(node, ir.Select):
        return [node.keys]
    if isinstance(node, ir.SwitchCase):
        return [node.body]
    if isinstance(node, (ir.Expr, ir.Stmt)) and dataclasses.is_dataclass(node):
        # Expressions and statements: every field that holds IR (an
        # ActionCall's action, a SubApply's block, a call's function …).
        return [getattr(node, f.name) for f in dataclasses.fields(node)
                if f.name not in ("type", "loc", "params", "type_args", "local")]
    return []


__all__ = ["check_v1model"]
