"""The front end's IR -> :class:`~.model.P4InfoModel` (and P4Info).

:func:`p4info_model` applies the rules of ``RULES.md`` (the rulebook of
:mod:`.model`) to a checked :class:`emulator.p4.ir.Program`;
:func:`p4info_for` also runs :func:`~.build.build_p4info`.  This module
owns the conversion of blocks, tables, actions, extern instances, value
sets, controller headers and the package; :mod:`.ir_walk` walks and
inlines code, :mod:`.ir_types` converts types and :mod:`.ir_annotations`
annotations.  Everything is derived from the IR:

* **Blocks** are visited in ``main``'s argument order (global extern
  instances first).  A control's instantiated sub-controls are inlined as
  p4c's ``Inline`` pass does: a sub-control's tables, actions and extern
  instances are placed after the caller's own (at the position of the
  instance declaration when the IR gives it as ``instance_loc``), and its
  apply block is walked where ``SubApply`` calls it.  Sub-blocks never
  applied are dropped with everything in them (p4c removes unused control
  instances).
* **Tables** never applied (no ``TableApply``/``TableApplyResult`` in the
  inlined apply blocks, or in the keys of applied tables) are dropped, and
  so are the extern instances built in their properties.  Code under
  ``if (true)``/``if (false)`` is walked as p4c leaves it after constant
  folding (the dead branch is gone).
* **Actions** of a control: the *global* actions first, in the order the
  remaining tables reference them (actions list, the ``NoAction`` that
  CreateBuiltins appends, default action, entries), then the apply block
  (direct calls); then the control's own actions in declaration order,
  keeping those referenced by a remaining table or called directly from an
  apply block.  Action-to-action calls are inlined by p4c before actions
  are localized, so they reference nothing.  An action referenced by no
  remaining table (only called directly) is listed without parameters: p4c
  ``RemoveActionParameters`` binds them all at the call.
* **Default action**: the IR fills ``NoAction()`` in when a table has no
  ``default_action``.  A non-const ``NoAction()`` default gives the same
  P4Info whether written or not when ``NoAction`` is in the actions list,
  and cannot have been written when it is not (the checker requires the
  default to be listed); so such a default is passed as ``None`` (the
  builder applies CreateBuiltins) exactly when ``NoAction`` is not listed.
* **Digests and extern functions** are found as p4c's serializer does:
  per control, in each listed action's body (action calls inlined), then
  in the apply block (sub-controls and functions inlined); parsers are not
  searched.
* **Names** are the IR's control-plane names (the checker applies
  ``@name`` and the block prefixes).  Types are named by their
  control-plane name (``@name`` of the declaration, if any).
* **Annotations** are rendered as p4c's ``ToP4`` prints them: the
  annotations p4c parses (``@noWarn``, ``@controller_header``, ...)
  as expressions joined by ``", "``, the others token by token
  (``Annotation.tokens``).  Structured annotations (``@x[...]``) are
  evaluated (literals, unary/binary operators and parentheses).

Limits (the IR does not carry the information): ``type`` declarations are
resolved to their underlying type by the checker, so match fields and
parameters never get a ``type_name`` and ``@p4runtime_translation`` is not
seen; a declared sub-control instance without ``instance_loc`` is placed
after all the caller's own declarations; a top-level extern instance is
recognised as one not owned by any block whose name has no ``.``.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Sequence

from emulator.p4 import ir
from emulator.p4 import types as T
from emulator.p4.ast import parse_integer_text

from . import model as m
from .build import build_p4info
from .ids import P4InfoError
from .ir_annotations import (
    PARSED_KV,
    annotated_id,
    body_tokens,
    control_plane_name,
    convert_annotations,
    int_arg,
    is_hidden,
    plain_annotation,
    split_commas,
    string_arg,
)
from .ir_types import flat_fields, named_types, type_name, type_spec, width_and_type
from .ir_walk import CodeWalk, flatten, is_in, source_pos, unique

__all__ = ["p4info_model", "p4info_for"]


class _Converter:
    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.model = m.P4InfoModel()
        self.digest_names: dict[tuple[int, int], str] = {}

    # ---- program ------------------------------------------------------------
    def run(self) -> m.P4InfoModel:
        p = self.program
        self.model.types = named_types(self.program)
        owned: set[int] = set()
        for block in self._all_blocks(p.package.blocks):
            owned.update(id(i) for i in block.instances)
        for inst in p.instances:
            if id(inst) not in owned and "." not in inst.name:
                self.extern(inst, in_place=False)
        for block in p.package.blocks:
            if isinstance(block, ir.Control):
                self.control(block)
            else:
                self.parser(block)
        self.controller_headers()
        self.model.pkg_info = self.pkg_info(p.package.annotations)
        return self.model

    def _all_blocks(self, blocks: Iterable[ir.Control | ir.Parser]
                    ) -> Iterator[ir.Control | ir.Parser]:
        for b in blocks:
            yield b
            yield from self._all_blocks(b.sub_blocks)

    # ---- controls -----------------------------------------------------------
    def control(self, block: ir.Control) -> None:
        flat = flatten(block)
        applied = flat.body.tables
        tables = [t for t in flat.tables if is_in(t, applied)]
        own = flat.actions

        # References in p4c LocalizeAllActions order: remaining tables, then
        # the apply block (action bodies reference nothing once inlined).
        refs: list[ir.Action] = []
        for t in tables:
            refs.extend(r.action for r in t.actions)
            refs.append(t.default_action.action)
            refs.extend(e.action.action for e in t.entries)
        table_refs = list(refs)
        refs.extend(flat.body.action_refs)
        globals_ = [a for a in unique(refs) if not is_in(a, own)]
        actions = globals_ + [a for a in own if is_in(a, refs)]

        for t in tables:
            self.model.tables.append(self.table(t))
        for a in actions:
            # p4c RemoveActionParameters: an action invoked directly (its
            # copy for that call, listed after a table's copy) has no params.
            self.model.actions.append(self.action(a, params=is_in(a, table_refs)))

        # Extern instances: those built in a removed table's property go too.
        in_place: dict[int, ir.Table] = {}
        for t in flat.tables:
            for inst in (t.implementation, t.direct_counter, t.direct_meter):
                if inst is not None and self._built_in_place(inst, t):
                    in_place[id(inst)] = t
        for inst in flat.instances:
            owner = in_place.get(id(inst))
            if owner is not None and not is_in(owner, tables):
                continue
            self.extern(inst, in_place=owner is not None)

        # Digests and extern functions: actions first, then the apply block.
        for a in actions:
            self.calls(CodeWalk(inline_actions=True).code([a.body]).extern_calls, block)
        self.calls(flat.body.extern_calls, block)

    @staticmethod
    def _built_in_place(inst: ir.Instance, table: ir.Table) -> bool:
        """An extern constructed in a table property (check/tables.py
        ``_attached``) has its ``@name`` as both names and sits after the
        table's start; a declared one precedes the table that uses it. One
        without ``@name`` (empty local name) cannot be named in P4Info."""
        if inst.local_name == "":
            raise P4InfoError(
                f"{inst.loc or table.name}: table {table.name}: the {inst.type.name} built in a "
                "table property has no @name annotation, which P4Runtime needs "
                "(p4c refuses to write P4Info for it too)")
        if inst.name != inst.local_name:
            return False
        a, b = source_pos(inst.loc), source_pos(table.loc)
        if a is None or b is None:
            return True
        return a[0] == b[0] and a[1:] > b[1:]

    def calls(self, calls: Sequence[ir.ExternCall], block: ir.Control) -> None:
        for call in calls:
            if call.target is not None:
                continue
            self.model.calls_extern_functions = True
            if call.method != "digest":
                continue
            if call.type_args:
                t = call.type_args[0]
            elif len(call.args) == 2:
                t = call.args[1].type
            else:
                raise P4InfoError(f"{call.loc}: digest() without a data argument")
            if isinstance(t, (T.StructType, T.HeaderType, T.HeaderUnionType)):
                name = type_name(t)
            else:
                key = (id(block), id(call))
                if key not in self.digest_names:
                    self.digest_names[key] = "digest_%d" % len(self.digest_names)
                name = self.digest_names[key]
            self.model.digests.append(m.Digest(name=name, type_spec=type_spec(t, name)))

    def table(self, t: ir.Table) -> m.Table:
        where = f"table {t.name}"
        keys = []
        for k in t.keys:
            width, ktype = width_and_type(k.expr.type, f"{where} key {k.name}")
            if isinstance(ktype, m.Bool):
                ktype = None
            keys.append(m.MatchField(name=k.name, bitwidth=width, match_kind=k.match_kind,
                                     id=annotated_id(k.annotations, where), type=ktype,
                                     **convert_annotations(k.annotations, where)))
        refs = [m.ActionRef(name=r.action.name, **convert_annotations(r.annotations, where))
                for r in t.actions]
        d = t.default_action
        default: Optional[m.DefaultAction]
        if (d.action.name == "NoAction" and not d.args and not t.default_action_const
                and not any(r.action is d.action for r in t.actions)):
            default = None  # CreateBuiltins
        else:
            default = m.DefaultAction(d.action.name, [int(c.value) for c in d.args],  # type: ignore[call-overload]
                                      const=t.default_action_const)
        timeout = t.other_properties.get("support_timeout")
        return m.Table(
            name=t.name, key=keys, actions=refs, default_action=default, size=t.size,
            implementation=t.implementation.name if t.implementation else None,
            direct_counter=t.direct_counter.name if t.direct_counter else None,
            direct_meter=t.direct_meter.name if t.direct_meter else None,
            is_const_table=t.entries_const, has_initial_entries=len(t.entries) > 0,
            support_timeout=isinstance(timeout, ir.Const) and timeout.value is True,
            id=annotated_id(t.annotations, where), hidden=is_hidden(t.annotations),
            **convert_annotations(t.annotations, where))

    def action(self, a: ir.Action, params: bool = True) -> m.Action:
        """``a``; ``params=False`` for an action only called directly."""
        where = f"action {a.name}"
        listed = []
        for p in a.params if params else ():
            if p.direction:
                continue  # bound by the caller, removed by the front end
            width, ptype = width_and_type(p.type, f"{where} parameter {p.name}")
            if isinstance(ptype, m.ErrorRef):
                raise P4InfoError(f"{where}: parameter {p.name} has a type which is not "
                                  "bit<>, int<>, bool, type or serializable enum")
            listed.append(m.Param(name=control_plane_name(p.name, p.annotations), bitwidth=width,
                                  id=annotated_id(p.annotations, where), type=ptype,
                                  **convert_annotations(p.annotations, where)))
        return m.Action(name=a.name, params=listed, id=annotated_id(a.annotations, where),
                        hidden=is_hidden(a.annotations), **convert_annotations(a.annotations, where))

    # ---- extern instances ---------------------------------------------------
    @staticmethod
    def _enum_member(c: ir.Expr) -> str:
        if isinstance(c, ir.Const) and isinstance(c.type, T.EnumType) \
                and isinstance(c.value, int):
            return c.type.members[c.value] if c.type.underlying is None \
                else c.type.members[c.type.values.index(c.value)]
        raise P4InfoError(f"expected an enum constant, got {c}")

    @staticmethod
    def _int(c: ir.Expr, where: str) -> int:
        if isinstance(c, ir.Const) and isinstance(c.value, int) and not isinstance(c.value, bool):
            return c.value
        raise P4InfoError(f"{where}: expected an integer constant")

    def extern(self, inst: ir.Instance, in_place: bool) -> None:
        kind = inst.type.name
        args = inst.ctor_args
        name = inst.name
        where = f"{kind} {name}"
        ann = convert_annotations(inst.annotations, where)
        pid = None if in_place else annotated_id(inst.annotations, where)
        if kind == "counter":
            self.model.counters.append(m.Counter(
                name=name, unit=self._enum_member(args[1]), size=self._int(args[0], where),
                id=pid, **ann))
        elif kind == "direct_counter":
            self.model.direct_counters.append(m.DirectCounter(
                name=name, unit=self._enum_member(args[0]), in_place=in_place, id=pid, **ann))
        elif kind == "meter":
            self.model.meters.append(m.Meter(
                name=name, unit=self._enum_member(args[1]), size=self._int(args[0], where),
                id=pid, **ann))
        elif kind == "direct_meter":
            self.model.direct_meters.append(m.DirectMeter(
                name=name, unit=self._enum_member(args[0]), in_place=in_place, id=pid, **ann))
        elif kind == "register":
            if not inst.type.type_args:
                raise P4InfoError(f"{where}: no element type")
            self.model.registers.append(m.Register(
                name=name, type_spec=type_spec(inst.type.type_args[0], where),
                size=self._int(args[0], where), id=pid, **ann))
        elif kind in ("action_profile", "action_selector"):
            selector = kind == "action_selector"
            size = self._int(args[1] if selector else args[0], where)
            mgs = plain_annotation(inst.annotations, "max_group_size")
            sss = plain_annotation(inst.annotations, "selector_size_semantics")
            mmw = plain_annotation(inst.annotations, "max_member_weight")
            self.model.action_profiles.append(m.ActionProfile(
                name=name, size=size, with_selector=selector,
                max_group_size=None if mgs is None else int_arg(mgs, where),
                selector_size_semantics=None if sss is None else string_arg(sss),
                max_member_weight=None if mmw is None else int_arg(mmw, where),
                in_place=in_place, id=pid, **ann))
        else:
            self.model.has_other_extern_instances = True

    # ---- parsers ------------------------------------------------------------
    def parser(self, block: ir.Parser) -> None:
        flat = flatten(block)
        for vs in flat.value_sets:
            self.model.value_sets.append(self.value_set(vs))
        for inst in flat.instances:
            self.extern(inst, in_place=False)

    def value_set(self, vs: ir.ValueSet) -> m.ValueSet:
        where = f"value_set {vs.name}"
        t = vs.element_type
        element: int | list[m.ValueSetField] | m.SerEnumDef
        if isinstance(t, T.BitsType):
            element = t.width
        elif isinstance(t, T.EnumType) and t.underlying is not None:
            element = m.SerEnumDef(t.name, t.underlying.width, list(zip(t.members, t.values)))
        elif isinstance(t, T.StructType):
            element = []
            for f in t.fields:
                width, _ = width_and_type(f.type, f"{where} field {f.name}")
                match = plain_annotation(f.annotations, "match")
                kind = "exact"
                if match is not None:
                    toks = body_tokens(match)
                    if len(toks) != 1:
                        raise P4InfoError(f"{where}: @match needs one match kind")
                    kind = toks[0]
                element.append(m.ValueSetField(
                    name=control_plane_name(f.name, f.annotations), bitwidth=width, match_kind=kind,
                    id=annotated_id(f.annotations, where), **convert_annotations(f.annotations, where)))
        else:
            raise P4InfoError(f"{where}: element type {t} is not supported by P4Runtime")
        return m.ValueSet(name=vs.name, size=vs.size, element=element,
                          id=annotated_id(vs.annotations, where),
                          **convert_annotations(vs.annotations, where))

    # ---- controller headers and package -------------------------------------
    def controller_headers(self) -> None:
        for t in unique(self.program.types.values()):
            if not isinstance(t, T.HeaderType):
                continue
            ch = plain_annotation(t.annotations, "controller_header")
            if ch is None:
                continue
            where = f"header {t.name}"
            controller_name = string_arg(ch)
            if controller_name is None:
                raise P4InfoError(f"{where}: @controller_header needs a string")
            fields = []
            for name, ftype, f in flat_fields(t):
                width, ref = width_and_type(ftype, f"{where} field {name}")
                fields.append(m.PacketMetadata(
                    name=name, bitwidth=width, id=annotated_id(f.annotations, where),
                    type=None if isinstance(ref, m.Bool) else ref,
                    hidden=is_hidden(f.annotations),
                    **{k: v for k, v in convert_annotations(f.annotations, where).items()
                       if k in ("annotations", "structured_annotations")}))
            self.model.controller_headers.append(m.ControllerHeader(
                name=type_name(t), controller_name=controller_name, fields=fields,
                id=annotated_id(t.annotations, where), hidden=is_hidden(t.annotations),
                **convert_annotations(t.annotations, where)))

    def pkg_info(self, annotations: Sequence[T.Annotation]) -> m.PkgInfo:
        pkg = m.PkgInfo(**convert_annotations(annotations, "main"))
        for a in annotations:
            if a.structured or a.name not in PARSED_KV:
                continue
            for group in split_commas(body_tokens(a)):
                if len(group) != 3 or group[1] != "=":
                    raise P4InfoError(f"main: @{a.name} needs key=value pairs")
                key, value = group[0], group[2]
                if a.name == "pkginfo":
                    if not (value.startswith('"') and value.endswith('"')):
                        raise P4InfoError(
                            f"Value for '{key}' key in @pkginfo annotation is not a string")
                    if key in ("name", "version", "organization", "contact", "url", "arch"):
                        setattr(pkg, key, value[1:-1])
                else:
                    parsed = parse_integer_text(value)
                    if parsed is None:
                        raise P4InfoError(f"Value for '{key}' key in @platform_property "
                                          "annotation is not an integer")
                    pkg.platform_properties[key] = parsed[0]
        return pkg


def p4info_model(program: ir.Program) -> m.P4InfoModel:
    """The P4Info model of a checked program (rules in ``RULES.md``)."""
    return _Converter(program).run()


def p4info_for(program: ir.Program, *, initial_default_action: bool = True):  # type: ignore[no-untyped-def]
    """The ``p4.config.v1.P4Info`` p4c generates for ``program``."""
    return build_p4info(p4info_model(program), initial_default_action=initial_default_action)
