"""Tables (P4-16 §14.2): keys and their control-plane names, the action
list, default action, const entries, size, implementation and direct
resources; and keysets, shared with parser ``select``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from emulator.p4 import ast, ir
from emulator.p4.check.context import Scope, annotation_string, has_annotation
from emulator.p4.check.typeres import annotations_of
from emulator.p4.types import (
    BitsType, BoolType, EnumType, ErrorType, HeaderType, HeaderUnionType, StructType, Type,
    find_annotation,
)

if TYPE_CHECKING:
    from emulator.p4.check.program import Checker

MATCH_KINDS = ("exact", "ternary", "lpm", "range", "optional", "selector")


def key_name(e: ast.Expression,
             member_name: Callable[[ast.MemberExpr], str] | None = None) -> str | None:
    """The match field name p4c derives from a key expression as written.

    ``member_name`` gives a member's name component (p4c uses the field's
    ``@name``; one starting with ``.`` replaces the whole name)."""
    def sub(x: ast.Expression) -> str | None:
        return key_name(x, member_name)

    if isinstance(e, ast.PathExpr):
        return e.name
    if isinstance(e, ast.MemberExpr):
        member = member_name(e) if member_name is not None else e.member
        if member.startswith("."):
            return member[1:]
        base = sub(e.base)
        return None if base is None else f"{base}.{member}"
    if isinstance(e, ast.CallExpr) and isinstance(e.callee, ast.MemberExpr) \
            and e.callee.member == "isValid" and not e.args:
        base = sub(e.callee.base)
        return None if base is None else f"{base}.$valid$"
    if isinstance(e, ast.IndexExpr):
        base, index = sub(e.base), sub(e.index)
        return None if base is None or index is None else f"{base}[{index}]"
    if isinstance(e, ast.SliceExpr):
        base, hi, lo = sub(e.base), sub(e.hi), sub(e.lo)
        return None if None in (base, hi, lo) else f"{base}[{hi}:{lo}]"
    if isinstance(e, ast.BinaryExpr) and e.op == "&":
        left, right = sub(e.left), sub(e.right)
        return None if left is None or right is None else f"{left} & {right}"
    if isinstance(e, ast.IntLiteral):
        return _literal_text(e)
    return None


def _literal_text(e: ast.IntLiteral) -> str:
    text = e.text.lower().replace("_", "")
    for sep in ("w", "s"):
        if sep in text and text.split(sep, 1)[0].isdigit():
            text = text.split(sep, 1)[1]
            break
    value = abs(e.value) if e.width is None else e.value
    sign = "-" if text.startswith("-") else ""
    body = text.lstrip("-")
    if body.startswith("0x"):
        return f"{sign}0x{value:x}"
    if body.startswith("0b"):
        return f"{sign}0b{value:b}"
    if body.startswith("0o"):
        return f"{sign}0o{value:o}"
    return f"{sign}{value}"


class TableChecker:
    def __init__(self, checker: "Checker") -> None:
        self.c = checker

    def table(self, n: ast.TableDecl, scope: Scope, prefix: str,
              instances: list[ir.Instance]) -> ir.Table:
        from emulator.p4.check.blocks import control_plane_name
        d = self.c.diags
        props: dict[str, ast.TableProperty] = {}
        for p in n.properties:
            if p.name in props:
                raise d.error(p.loc, f"table {n.name}: property {p.name} given twice")
            props[p.name] = p
        keys: list[ir.TableKey] = []
        kp = props.get("key")
        if isinstance(kp, ast.KeyProperty):
            for el in kp.elements:
                keys.append(self._key(el, scope, n.name))
        if sum(k.match_kind == "lpm" for k in keys) > 1:
            raise d.error(n.loc, f"table {n.name}: BMv2 allows at most one lpm key")
        refs: list[ir.ActionRef] = []
        ap = props.get("actions")
        if not isinstance(ap, ast.ActionsProperty):
            raise d.error(n.loc, f"table {n.name} has no actions property")
        for ref in ap.actions:
            action = self._action(ref, scope)
            refs.append(ir.ActionRef(action, annotations_of(ref.annotations),
                                     self._bound_directional(ref, action, scope)))
        default = props.get("default_action")
        if isinstance(default, ast.DefaultActionProperty) and default.action is not None:
            bound = self._bound(default.action, scope, refs, n.name)
            default_const = default.is_const
        else:
            noaction = scope.lookup("NoAction")
            if noaction is None or noaction.kind != "action":
                raise d.error(n.loc, f"table {n.name} has no default_action and NoAction is not declared")
            bound = ir.BoundAction(self.c.blocks.action_for(noaction, n.loc), ())
            default_const = False
        entries: list[ir.TableEntry] = []
        entries_const = False
        ep = props.get("entries")
        if isinstance(ep, ast.EntriesProperty):
            entries_const = ep.is_const
            if not keys:
                raise d.error(ep.loc, f"table {n.name}: entries cannot be given for a table without a key")
            if not entries_const:
                raise d.unsupported_error(ep.loc, "non-const table entries")
            for entry in ep.entries:
                keysets = self.keysets(entry.keysets, [k.expr.type for k in keys], scope, entry.loc,
                                       kinds=[k.match_kind for k in keys])
                action = self._bound(entry.action, scope, refs, n.name)
                if any(r.action is action.action and find_annotation(r.annotations, "defaultonly")
                       for r in refs):
                    raise d.error(entry.loc, f"table {n.name}: action {action.action.local_name} is "
                                             "@defaultonly and cannot be used in an entry")
                self._check_entry_keysets(entry, keys, keysets)
                priority = None
                if entry.priority is not None:
                    # p4c's EntryPriorities pass: priorities are only for non-const entries.
                    raise d.error(entry.loc, f"table {n.name}: const entries cannot have priorities")
                entries.append(ir.TableEntry(tuple(keysets), action, priority,
                                             annotations_of(entry.annotations), loc=entry.loc))
        size = 1024
        other: dict[str, ir.Expr] = {}
        implementation = direct_counter = direct_meter = None
        for name, prop in props.items():
            if name in ("key", "actions", "default_action", "entries"):
                continue
            if not isinstance(prop, ast.ExpressionProperty) or prop.value is None:
                raise d.error(prop.loc, f"table {n.name}: property {name} needs a value")
            if name == "size":
                size = self.c.const_int(prop.value, scope, "a table size")
            elif name in ("implementation", "counters", "meters"):
                inst = self._attached(prop, scope, instances)
                if name == "implementation":
                    if inst.type.name not in ("action_profile", "action_selector"):
                        raise d.error(prop.loc, "implementation must be an action_profile or action_selector")
                    implementation = inst
                elif name == "counters":
                    if inst.type.name != "direct_counter":
                        raise d.error(prop.loc, "counters must be a direct_counter")
                    direct_counter = inst
                else:
                    if inst.type.name != "direct_meter":
                        raise d.error(prop.loc, "meters must be a direct_meter")
                    direct_meter = inst
            else:
                other[name] = self.c.exprs.check(prop.value, scope)
        selector = any(k.match_kind == "selector" for k in keys)
        if selector and (implementation is None or implementation.type.name != "action_selector"):
            raise d.error(n.loc, f"table {n.name}: selector keys need an action_selector implementation")
        return ir.Table(control_plane_name(prefix, n.name, n.annotations), n.name, tuple(keys),
                        tuple(refs), bound, default_const, tuple(entries), entries_const, size,
                        implementation, direct_counter, direct_meter, annotations_of(n.annotations),
                        other, loc=n.loc)

    def _check_entry_keysets(self, entry: ast.TableEntry, keys: list[ir.TableKey],
                             keysets: list[ir.Keyset]) -> None:
        """p4c's BMv2 back end: an lpm mask must be a prefix; optional takes a
        value or ``_`` only."""
        d = self.c.diags
        for key, ks in zip(keys, keysets):
            if not isinstance(ks, ir.KeysetMask):
                continue
            width = key.expr.type.width if isinstance(key.expr.type, BitsType) else 1
            mask = ks.mask & ((1 << width) - 1)
            if key.match_kind == "lpm":
                low = (mask & -mask).bit_length() - 1 if mask else width
                if mask and (mask >> low) != (1 << (width - low)) - 1:
                    raise d.error(entry.loc, f"invalid mask {ks.mask:#x} for the lpm key {key.name}")
            elif key.match_kind == "optional":
                raise d.error(entry.loc, f"an optional key ({key.name}) takes a value or '_', not a mask")
            elif key.match_kind in ("exact", "range"):
                raise d.error(entry.loc, f"a mask is not allowed for the {key.match_kind} key {key.name}")

    def _key(self, el: ast.KeyElement, scope: Scope, table: str) -> ir.TableKey:
        d = self.c.diags
        if el.match_kind not in MATCH_KINDS:
            sym = scope.lookup(el.match_kind)
            if sym is None or sym.kind != "match_kind":
                raise d.error(el.loc, f"unknown match kind {el.match_kind!r}; allowed: {', '.join(MATCH_KINDS)}")
            raise d.unsupported_error(el.loc, f"match kind {el.match_kind!r}")
        expr = self.c.exprs.check(el.expr, scope)
        if not isinstance(expr.type, (BitsType, BoolType, EnumType, ErrorType)):
            raise d.error(el.expr.loc, f"a key of type {expr.type} cannot be matched")
        if isinstance(expr.type, EnumType) and expr.type.underlying is None:
            raise d.error(el.expr.loc, "a key of a non-serializable enum type cannot be matched")
        name = annotation_string(el.annotations, "name") or key_name(
            el.expr, lambda m: self._field_name(m, scope))
        if name is None:
            raise d.error(el.expr.loc, f"table {table}: this key needs a @name annotation")
        return ir.TableKey(expr, el.match_kind, name, annotations_of(el.annotations))

    def _field_name(self, e: ast.MemberExpr, scope: Scope) -> str:
        """The key name component of ``e``: its field's ``@name`` if any."""
        t = self.c.exprs.check(e.base, scope).type
        if isinstance(t, (StructType, HeaderType, HeaderUnionType)):
            for f in t.fields:
                if f.name == e.member:
                    given = find_annotation(f.annotations, "name")
                    if given is not None and given.args and isinstance(given.args[0], str):
                        return given.args[0]
        return e.member

    def _action(self, ref: ast.ActionRef, scope: Scope) -> ir.Action:
        sym = scope.lookup(ref.name)
        if sym is None or sym.kind != "action":
            raise self.c.diags.error(ref.loc, f"{ref.name!r} is not an action")
        return self.c.blocks.action_for(sym, ref.loc)

    def _bound(self, ref: ast.ActionRef, scope: Scope, refs: list[ir.ActionRef],
               table: str) -> ir.BoundAction:
        d = self.c.diags
        action = self._action(ref, scope)
        if not any(r.action is action for r in refs):
            raise d.error(ref.loc, f"{ref.name} is not in the actions of table {table}")
        params = [p for p in action.params if not p.direction]
        args = ref.args or ()
        if len(args) == len(action.params) > len(params):
            # ``default_action = a(dir_args, data)``: the directional arguments
            # must repeat those of the actions list; only the data is kept.
            n_dir = len(action.params) - len(params)
            listed = next(r for r in refs if r.action is action).args
            for given, bound in zip(args[:n_dir], listed):
                if not _same_expr(self.c.exprs.check(given.value, scope), bound):
                    raise d.error(given.loc, f"{ref.name}: argument does not match the one in the actions list")
            args = args[n_dir:]
        if len(args) != len(params):
            raise d.error(ref.loc, f"{ref.name} takes {len(params)} arguments, got {len(args)}")
        values = tuple(self.c.exprs.const(a.value, scope, p.type) for a, p in zip(args, params))
        return ir.BoundAction(action, values)

    def _bound_directional(self, ref: ast.ActionRef, action: ir.Action, scope: Scope) -> tuple[ir.Expr, ...]:
        """The arguments an actions-list entry binds to the directional
        parameters (P4-16 §14.2.1.2); the control plane gives the rest."""
        from emulator.p4.check.calls import is_lvalue
        d = self.c.diags
        directional = [p for p in action.params if p.direction]
        args = ref.args or ()
        if len(args) != len(directional):
            if not directional:
                raise d.error(ref.loc, f"{ref.name}: only directional parameters are bound in an "
                                       "actions list; the control plane supplies the others")
            raise d.error(ref.loc, f"{ref.name} has {len(directional)} directional parameters; the "
                                   f"actions list must give them ({len(args)} given)")
        out = []
        for p, a in zip(directional, args):
            if a.name is not None and a.name != p.name:
                raise d.error(a.loc, f"{ref.name} has no directional parameter {a.name!r} here")
            e = self.c.exprs.check(a.value, scope, p.type)
            if p.direction in ("out", "inout") and not is_lvalue(e, self.c.readonly):
                raise d.error(a.loc, f"argument for {p.direction} parameter {p.name!r} must be assignable")
            out.append(e)
        return tuple(out)

    def _attached(self, prop: ast.ExpressionProperty, scope: Scope,
                  instances: list[ir.Instance]) -> ir.Instance:
        d = self.c.diags
        value = prop.value
        if isinstance(value, ast.PathExpr):
            sym = scope.lookup(value.name)
            if sym is None or sym.kind != "instance" or not isinstance(sym.value, ir.Instance):
                raise d.error(value.loc, f"{value.name!r} is not an extern instance")
            return sym.value
        if isinstance(value, ast.ConstructorCallExpr):
            name = annotation_string(prop.annotations, "name")
            if name is None:
                # p4c accepts it and fails only when writing P4Info, so we run
                # it and leave the refusal to P4Info generation: an empty
                # local name marks the instance as anonymous.
                anonymous = f"{prop.name}@{prop.loc.line}:{prop.loc.col}" if prop.loc else prop.name
                return self._in_place(value, prop, scope, instances, anonymous, "")
            return self._in_place(value, prop, scope, instances, name.lstrip("."), name.lstrip("."))
        raise d.error(prop.loc, f"property {prop.name} needs an extern instance")

    def _in_place(self, value: ast.ConstructorCallExpr, prop: ast.ExpressionProperty, scope: Scope,
                  instances: list[ir.Instance], name: str, local_name: str) -> ir.Instance:
        inst = self.c.blocks.extern_instance(value.type, value.args, prop.annotations,
                                             name, local_name, scope, value.loc)
        instances.append(inst)
        return inst

    # ---- keysets -------------------------------------------------------------------------
    def keysets(self, nodes: tuple[ast.Expression, ...], types: list[Type], scope: Scope, loc,  # type: ignore[no-untyped-def]
                kinds: list[str] | None = None) -> list[ir.Keyset]:
        d = self.c.diags
        if len(nodes) == 1 and len(types) != 1:
            only = nodes[0]
            if isinstance(only, ast.DefaultExpr) or isinstance(only, ast.DontCareExpr):
                return [ir.KeysetDefault()]
            if isinstance(only, ast.PathExpr):
                sym = scope.lookup(only.name)
                if sym is not None and sym.kind == "value_set":
                    return [ir.KeysetValueSet(sym.value)]  # type: ignore[arg-type]
            if isinstance(only, ast.ListExpr):
                nodes = only.elements
        if len(nodes) == 1 and isinstance(nodes[0], ast.ListExpr) and len(nodes[0].elements) == len(types):
            nodes = nodes[0].elements  # ``{a}`` or ``{a, b}`` written as a tuple keyset
        if len(nodes) != len(types):
            raise d.error(loc, f"{len(nodes)} keyset values for {len(types)} keys")
        return [self._keyset(node, t, scope) for node, t in zip(nodes, types)]

    def _keyset(self, node: ast.Expression, t: Type, scope: Scope) -> ir.Keyset:
        if isinstance(node, (ast.DefaultExpr, ast.DontCareExpr)):
            return ir.KeysetDefault()
        if isinstance(node, ast.MaskExpr):
            # A mask of a serializable-enum key is a plain integer of its width.
            mt = t.underlying if isinstance(t, EnumType) and t.underlying is not None else t
            return ir.KeysetMask(self._value(node.value, t, scope), self._value(node.mask, mt, scope))
        if isinstance(node, ast.RangeExpr):
            return ir.KeysetRange(self._value(node.lo, t, scope), self._value(node.hi, t, scope))
        if isinstance(node, ast.PathExpr):
            sym = scope.lookup(node.name)
            if sym is not None and sym.kind == "value_set":
                return ir.KeysetValueSet(sym.value)  # type: ignore[arg-type]
        return ir.KeysetValue(self._value(node, t, scope))

    def _value(self, node: ast.Expression, t: Type, scope: Scope) -> int:
        c = self.c.exprs.const(node, scope, t)
        value = c.value
        if isinstance(value, bool):
            return int(value)
        if isinstance(t, BitsType) and t.signed:
            return int(value) & t.mask  # type: ignore[call-overload]
        return int(value)  # type: ignore[call-overload]


def _same_expr(a: ir.Expr, b: ir.Expr) -> bool:
    """Structural equality of two checked expressions (lvalues, constants)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ir.LocalRef):
        return a.local is b.local  # type: ignore[attr-defined]
    if isinstance(a, ir.Const):
        return a.value == b.value and a.type == b.type  # type: ignore[attr-defined]
    if isinstance(a, ir.Member):
        return a.name == b.name and _same_expr(a.base, b.base)  # type: ignore[attr-defined]
    if isinstance(a, ir.StackElement):
        return _same_expr(a.base, b.base) and _same_expr(a.index, b.index)  # type: ignore[attr-defined]
    if isinstance(a, ir.Slice):
        return (a.hi, a.lo) == (b.hi, b.lo) and _same_expr(a.base, b.base)  # type: ignore[attr-defined]
    return False


__all__ = ["TableChecker", "key_name", "has_annotation"]
