"""The checker of a whole program: top-level declarations in order, then the
``main`` package instance and the blocks it names."""

from __future__ import annotations

from emulator.p4 import ast, ir
from emulator.p4.check.blocks import BlockChecker
from emulator.p4.check.calls import CallChecker
from emulator.p4.check.context import Abort, Diagnostics, Scope, Symbol, declare
from emulator.p4.check.expr import ExprChecker
from emulator.p4.check.stmt import StmtChecker
from emulator.p4.check.tables import TableChecker
from emulator.p4.check.typeres import TypeResolver, annotations_of
from emulator.p4.check.v1model import check_v1model
from emulator.p4.types import ErrorType, ExternType, StructType, Type

TYPE_DECLS = (ast.HeaderTypeDecl, ast.HeaderUnionDecl, ast.StructTypeDecl, ast.EnumDecl,
              ast.TypedefDecl, ast.NewTypeDecl)


class Checker:
    """State of one run: the global scope, collected objects, diagnostics."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.diags = Diagnostics()
        self.globals = Scope(owner="")
        self.error_type = ErrorType(())
        self.named_types: dict[str, Type] = {}
        self.all_actions: list[ir.Action] = []
        self.all_tables: list[ir.Table] = []
        self.all_instances: list[ir.Instance] = []
        self.all_value_sets: list[ir.ValueSet] = []
        self.direct_instances: dict[tuple[str, str], ir.Control | ir.Parser] = {}
        self.sub_blocks_stack: list[list[ir.Control | ir.Parser]] = []
        self.late_sub_blocks: dict[str, list[ir.Control | ir.Parser]] = {}
        # id(ir.Local) of a parameter with a default value → (its expression, declaring scope)
        self.param_defaults: dict[int, tuple[ast.Expression, Scope]] = {}
        # ids of directionless action/function parameters: read-only, like 'in'
        self.readonly: set[int] = set()
        self.types = TypeResolver(self)
        self.exprs = ExprChecker(self)
        self.calls = CallChecker(self)
        self.stmts = StmtChecker(self)
        self.blocks = BlockChecker(self)
        self.tables = TableChecker(self)

    # ---- constants ---------------------------------------------------------------------
    def const_int(self, node: ast.Expression, scope: Scope, what: str) -> int:
        c = self.exprs.const(node, scope)
        if isinstance(c.value, bool) or not isinstance(c.value, int):
            raise self.diags.error(node.loc, f"{what} must be an integer constant")
        return c.value

    def const_expr(self, node: ast.Expression, scope: Scope, t: Type) -> ir.Const:
        return self.exprs.const(node, scope, t)

    def declare_const(self, n: ast.ConstantDecl, scope: Scope) -> None:
        t = self.types.resolve(n.type, scope)
        value = self.exprs.const(n.value, scope, t)
        declare(scope, self.diags, n.name, Symbol("const", value, n), n.loc)

    # ---- the program ---------------------------------------------------------------------
    def run(self, program: ast.Program) -> ir.Program:
        errors: list[str] = []
        for decl in program.declarations:
            if isinstance(decl, ast.ErrorDecl):
                errors.extend(m.name for m in decl.members if m.name not in errors)
        self.error_type = ErrorType(tuple(errors))
        self.globals.names["error"] = Symbol("type", self.error_type)
        main: ast.Instantiation | None = None
        for decl in program.declarations:
            try:
                if isinstance(decl, ast.Instantiation) and decl.name == "main":
                    main = decl
                else:
                    self._top(decl)
            except Abort:
                continue
        package = None
        if main is not None:
            try:
                package = self._package(main)
            except Abort:
                pass
        self._check_unreached(program)
        if main is None:
            self.diags.error(None, "the program has no 'main' package instance")
            self.diags.raise_if_any()
        self._check_control_plane_names()
        self.diags.raise_if_any()
        assert package is not None
        return ir.Program(self.source, package, dict(self.named_types), self.error_type.members,
                          actions=tuple(self.all_actions), tables=tuple(self.all_tables),
                          instances=tuple(self.all_instances), value_sets=tuple(self.all_value_sets))

    def _check_unreached(self, program: ast.Program) -> None:
        """p4c type-checks every declaration, used or not: check the functions,
        actions, controls and parsers the package did not reach (those
        without constructor or type parameters), then forget what they
        built. Only their errors count, not constructs the built-in target
        would refuse."""
        kept = (len(self.all_actions), len(self.all_tables), len(self.all_instances),
                len(self.all_value_sets))
        for decl in program.declarations:
            before = len(self.diags.items)
            try:
                if isinstance(decl, ast.FunctionDecl) and not decl.type_params:
                    self.blocks.function_for(Symbol("function", decl), decl.loc)
                elif isinstance(decl, ast.ActionDecl):
                    self.blocks.action_for(Symbol("action", decl), decl.loc)
                elif isinstance(decl, (ast.ControlDecl, ast.ParserDecl)) and not decl.ctor_params \
                        and not decl.type_params and id(decl) not in self.blocks.instantiated:
                    self.blocks.instantiate(decl, decl.name, (), self.globals, decl.loc)
            except Abort:
                pass
            new = self.diags.items[before:]
            if any(_unsupported(d) for d in new):
                del self.diags.items[before:]
                self.diags.items.extend(d for d in new if not _unsupported(d))
        del self.all_actions[kept[0]:], self.all_tables[kept[1]:], self.all_instances[kept[2]:]
        del self.all_value_sets[kept[3]:]

    def _check_control_plane_names(self) -> None:
        """p4c's P4Info generation: one object per control-plane name and kind."""
        for kind, objects in (("table", self.all_tables), ("action", self.all_actions),
                              ("extern instance", self.all_instances)):
            seen: dict[str, object] = {}
            for obj in objects:
                first = seen.setdefault(obj.name, obj)  # type: ignore[attr-defined]
                if first is not obj:
                    self.diags.error(getattr(obj, "loc", None),
                                     f"conflicting control-plane name: {kind} {obj.name!r} is "  # type: ignore[attr-defined]
                                     "declared more than once")

    def _top(self, decl: ast.Node) -> None:
        g = self.globals
        d = self.diags
        if isinstance(decl, ast.ErrorDecl):
            return
        if isinstance(decl, ast.MatchKindDecl):
            for m in decl.members:
                declare(g, d, m.name, Symbol("match_kind", m.name, m), m.loc)
            return
        if isinstance(decl, TYPE_DECLS):
            self.types.declare_type(decl, g)
            return
        if isinstance(decl, ast.ConstantDecl):
            self.declare_const(decl, g)
            return
        kinds = {ast.ExternDecl: "extern", ast.ExternFunctionDecl: "extern_function",
                 ast.FunctionDecl: "function", ast.ActionDecl: "action",
                 ast.ParserTypeDecl: "parser_type", ast.ControlTypeDecl: "control_type",
                 ast.PackageTypeDecl: "package", ast.ParserDecl: "parser", ast.ControlDecl: "control"}
        kind = kinds.get(type(decl))  # type: ignore[arg-type]
        if kind is not None:
            name = decl.name  # type: ignore[attr-defined]
            declare(g, d, name, Symbol(kind, decl, decl), decl.loc)
            return
        if isinstance(decl, ast.Instantiation):
            inst = self.blocks.instance(decl, g, "")
            declare(g, d, decl.name, Symbol("instance", inst, decl), decl.loc)
            return
        raise d.unsupported_error(getattr(decl, "loc", None), f"the top-level {type(decl).__name__}")

    def _package(self, main: ast.Instantiation) -> ir.Package:
        d = self.diags
        base = main.type.base if isinstance(main.type, ast.SpecializedType) else main.type
        sym = self.globals.lookup(base.name) if isinstance(base, ast.TypeName) else None
        if sym is None or sym.kind != "package":
            raise d.error(main.type.loc, "'main' must be an instance of a package")
        pkg: ast.PackageTypeDecl = sym.decl  # type: ignore[assignment]
        if len(main.args) != len(pkg.params):
            raise d.error(main.loc, f"{pkg.name} takes {len(pkg.params)} arguments, got {len(main.args)}")
        blocks: list[ir.Control | ir.Parser] = []
        for param, arg in zip(pkg.params, main.args):
            blocks.append(self._package_arg(param, arg))
        self._check_package_types(pkg, blocks, main)
        for block in self._all_blocks(blocks):
            late = self.late_sub_blocks.get(block.name)
            if late:
                block.sub_blocks = block.sub_blocks + tuple(late)
        package = ir.Package(pkg.name, tuple(blocks), annotations_of(main.annotations))
        check_v1model(package, self.diags)
        return package

    def _all_blocks(self, blocks: list[ir.Control | ir.Parser]) -> list[ir.Control | ir.Parser]:
        out: list[ir.Control | ir.Parser] = []
        todo = list(blocks)
        while todo:
            b = todo.pop(0)
            out.append(b)
            todo.extend(b.sub_blocks)
            todo.extend(self.late_sub_blocks.get(b.name, ()))
        return out

    def _package_arg(self, param: ast.Param, arg: ast.Argument) -> ir.Control | ir.Parser:
        d = self.diags
        value = arg.value
        if isinstance(value, ast.ConstructorCallExpr):
            base = value.type.base if isinstance(value.type, ast.SpecializedType) else value.type
            sym = self.globals.lookup(base.name) if isinstance(base, ast.TypeName) else None
            if sym is None or sym.kind not in ("control", "parser"):
                raise d.error(value.loc, f"argument {param.name} must be a parser or control")
            return self.blocks.instantiate(sym.decl, sym.decl.name, value.args, self.globals, value.loc)  # type: ignore[arg-type,union-attr]
        if isinstance(value, ast.PathExpr):
            sym = self.globals.lookup(value.name)
            if sym is not None and sym.kind == "instance" and isinstance(sym.value, (ir.Control, ir.Parser)):
                return sym.value
        raise d.error(value.loc, f"argument {param.name} must be a parser or control instance")

    def _check_package_types(self, pkg: ast.PackageTypeDecl, blocks: list[ir.Control | ir.Parser],
                             main: ast.Instantiation) -> None:
        """Each block's apply parameters must match its package parameter's
        parser/control type, with the package's type variables bound once."""
        d = self.diags
        bindings: dict[str, Type] = {}
        for param, block in zip(pkg.params, blocks):
            ptype = param.type
            base = ptype.base if isinstance(ptype, ast.SpecializedType) else ptype
            args = ptype.args if isinstance(ptype, ast.SpecializedType) else ()
            sym = self.globals.lookup(base.name) if isinstance(base, ast.TypeName) else None
            if sym is None or sym.kind not in ("parser_type", "control_type"):
                continue
            tdecl = sym.decl
            want_parser = sym.kind == "parser_type"
            if want_parser != isinstance(block, ir.Parser):
                raise d.error(main.loc, f"{pkg.name}: argument {param.name} must be a "
                                        f"{'parser' if want_parser else 'control'}")
            if len(tdecl.params) != len(block.params):  # type: ignore[union-attr]
                raise d.error(block.loc, f"{block.name} must take {len(tdecl.params)} parameters "  # type: ignore[union-attr]
                                         f"to be the {param.name} of {pkg.name}")
            local: dict[str, str] = {}
            for tp, a in zip(tdecl.type_params, args):  # type: ignore[union-attr]
                if isinstance(a, ast.TypeName):
                    local[tp.name] = a.name
            for tp_param, bp in zip(tdecl.params, block.params):  # type: ignore[union-attr]
                if tp_param.direction != bp.direction:
                    raise d.error(bp.loc, f"{block.name}: parameter {bp.name} must be "
                                          f"'{tp_param.direction or 'directionless'}' for {pkg.name}")
                tn = tp_param.type
                if isinstance(tn, ast.TypeName) and tn.name in local:
                    var = local[tn.name]
                    bound = bindings.setdefault(var, bp.type)
                    if bound != bp.type:
                        raise d.error(bp.loc, f"{block.name}: parameter {bp.name} has type {bp.type}, "
                                              f"but the other blocks use {bound}")
                elif isinstance(tn, ast.TypeName):
                    sym2 = self.globals.lookup(tn.name)
                    want = sym2.value if sym2 is not None and sym2.kind == "type" else None
                    if isinstance(want, StructType) and want != bp.type:
                        raise d.error(bp.loc, f"{block.name}: parameter {bp.name} must be {want}")
                    if sym2 is not None and sym2.kind == "extern" and (
                            not isinstance(bp.type, ExternType) or bp.type.name != tn.name):
                        raise d.error(bp.loc, f"{block.name}: parameter {bp.name} must be {tn.name}")


def _unsupported(d: object) -> bool:
    return "not supported by the built-in target" in getattr(d, "message", "")


def check_program(program: ast.Program, source: str = "<program>") -> ir.Program:
    """Check a parsed program; raises CompileError with every error found."""
    return Checker(source).run(program)
