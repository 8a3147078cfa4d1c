"""Generates the Python module of a program: frame classes, parser states,
controls, actions, tables and functions, then executes it once. With the
package's block roles it also writes ``mk_packet(ctx)``, which makes a
packet's whole frame in one call.

The result, :class:`CompiledBlocks`, maps every IR block, action and table to
its Python function; the pipeline and the control plane use it. Asked for
(``cython=True``), the same code is built as a C extension instead
(:mod:`.compiled`), falling back to Python where it cannot be.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from emulator.p4 import ir
from emulator.p4.exec import compiled
from emulator.p4.exec import externs as rt
from emulator.p4.exec.codegen import Codegen, ExternLowering, FuncScope, unsupported
from emulator.p4.exec.cython_module import cython_module, run_time_names
from emulator.p4.exec.driver import driver_source
from emulator.p4.exec.layout import Layouts, as_object, is_aggregate, py_ident, scalar_width
from emulator.p4.exec.tables import Table
from emulator.p4.types import BoolType, HeaderType, StructType


@dataclass
class CompiledBlocks:
    source: str
    namespace: dict[str, object]
    block_fns: dict[int, object]
    frame_classes: dict[int, type]
    action_fns: dict[int, object]
    param_slots: dict[int, list[str]]
    class_names: dict[object, str]
    cache_blocked: str | None = None  # why ingress decisions cannot be cached
    executor: str = "python"  # or "cython": the code runs as a C extension
    executor_note: str = ""   # why Cython was asked for and not used

    def class_for(self, t: object) -> type:
        """The generated class of an aggregate type used by a block parameter."""
        return self.namespace[self.class_names[t]]  # type: ignore[return-value]

    def maker_for(self, t: object) -> "Callable[[], object]":
        """What makes a fresh value of an aggregate type (zero fields,
        invalid headers): ``mk_<class>`` for a struct, else the class."""
        name = self.class_names[t]
        return self.namespace.get("mk_" + name) or self.namespace[name]  # type: ignore[return-value]

    def frame(self, block: ir.Control | ir.Parser) -> object:
        return self.frame_classes[id(block)]()

    def run(self, block: ir.Control | ir.Parser, frame: object) -> None:
        self.block_fns[id(block)](frame)  # type: ignore[operator]


class ModuleBuilder:
    """Drives :class:`Codegen` over a whole program."""

    def __init__(self, program: ir.Program, lowering: ExternLowering,
                 tables: dict[int, Table], value_sets: dict[int, object],
                 errors: dict[str, int], roles: tuple[tuple[str, ...], ...] = (),
                 name: str = "",
                 types_cache: dict[tuple[str, tuple[tuple[str, int], ...]], dict[str, object]]
                 | None = None, cached_block: int | None = None, cython: bool = False,
                 driver_env: dict[str, object] | None = None,
                 decision_paths: tuple[list[str], list[str] | None] | None = None) -> None:
        """``roles`` names the parameters of the package's blocks (one tuple
        per block); blocks with roles share one frame class,
        ``PacketFrame``, so a packet's frame passes from block to block
        without copying. ``name`` is added to the generated code's file name;
        ``types_cache`` (shared by the pipelines of one program) keeps the
        generated classes for the next builder of the same program.
        ``cached_block``: the index of the package block whose decisions
        the architecture caches (v1model: ingress, see :mod:`.decisions`);
        code only other blocks run neither marks passes nor keeps counter
        bumps (None: all code does). ``cython``: build the code as a C
        extension (:mod:`.compiled`), or say why not in the result's
        ``executor_note`` and run it as Python. ``driver_env``: write the
        v1model packet flow (:mod:`.driver`) into the module too, with
        these names bound (the pipeline as ``PIPE``, its classes).
        ``decision_paths``: the fields the ingress decision cache reads and
        keys on (:class:`.decisions.DecisionCache`'s arguments); the
        compiled module then has their accessors (``_dc_accessors``)."""
        self.program = program
        self.decision_paths = decision_paths
        self.cython = cython
        self.driver_env = driver_env
        # compiled: the speedups build whose result classes the module cimports
        self._shared_results = compiled.shared_results_key() if cython else None
        self._frame_types: dict[int, dict[str, object]] = {}  # slot → P4 type, per frame
        self._fn_frames: dict[str, str] = {}  # function → the frame class its F is
        self.cached_block = cached_block
        self.name = name
        self.types_cache = types_cache
        self.lowering = lowering
        self.tables = tables
        self.value_sets = value_sets
        self.errors = errors
        self.roles = roles
        self.gen = Codegen(Layouts(), lowering)
        self._done: set[int] = set()
        self._frame_slots: dict[int, list[str]] = {}
        self._param_slots: dict[int, list[str]] = {}
        self._frame_names: dict[int, str] = {}
        self._block_names: dict[int, str] = {}
        self._actions: dict[int, ir.Action] = {}
        # the blocks sharing PacketFrame, in package order (the generated text
        # must not depend on where objects live: a build is keyed by it)
        self._shared: dict[int, None] = {}
        self._bound: dict[tuple[int, int], str] = {}  # (id(table), aid) → wrapper name
        for block, names in zip(program.package.blocks, roles):
            self._shared[id(block)] = None
            for param, name in zip(block.params, names):
                self.gen.force_name(param, "v", name)

    def build(self) -> CompiledBlocks:
        if not self.cython:
            self._generate()
            return self._finish()
        self.gen.layouts.cython = True
        self._generate()
        try:
            return self._compiled("\n".join(self.gen.lines))
        except compiled.Unavailable as exc:
            note = str(exc)
        # The Python executor's code (that text differs: a fresh builder).
        python = ModuleBuilder(self.program, self.lowering, self.tables, self.value_sets,
                               self.errors, self.roles, self.name, self.types_cache,
                               self.cached_block, driver_env=self.driver_env,
                               decision_paths=self.decision_paths)
        result = python.build()
        result.executor_note = note
        return result

    def _generate(self) -> None:
        gen = self.gen
        for i, block in enumerate(self.program.package.blocks):
            for p in block.params:
                if is_aggregate(p.type):
                    gen.layouts.class_name(p.type)
            # A block's own actions and tables run in it alone; what blocks
            # share (sub-controls, functions, top-level actions) is made
            # below, as ingress code.
            gen.tracks_cache = self.cached_block is None or i == self.cached_block
            self._block(block)
        gen.tracks_cache = True
        while gen.pending_blocks or gen.pending_functions or gen.pending_actions:
            if gen.pending_blocks:
                self._block(gen.pending_blocks.pop())
            elif gen.pending_functions:
                self._function(gen.pending_functions.pop())
            else:
                # a top-level action called directly: it sees no block locals
                self._action(gen.pending_actions.pop(), set())
        if self.driver_env is not None:
            for name, value in self.driver_env.items():
                gen.bind(name, value)
            blocks = self.program.package.blocks
            sm_type = blocks[0].params[3].type
            gen.lines.extend(driver_source([self._block_names[id(b)] for b in blocks],
                                           gen.layouts.class_name(sm_type), self.cython,
                                           keyed=self.decision_paths is not None,
                                           shared_results=self._shared_results is not None
                                           ).splitlines())

    def _finish(self) -> CompiledBlocks:
        gen = self.gen
        body = "\n".join(gen.lines)
        frames = "\n\n".join(self._frame_source(key, slots)
                             for key, slots in self._frame_slots.items()
                             if key not in self._shared)
        if self._shared:
            shared: list[str] = []
            for key in self._shared:
                shared.extend(x for x in self._frame_slots[key] if x not in shared)
            frames += f"\n\nclass PacketFrame:\n    __slots__ = {tuple(['_ctx'] + shared)!r}"
            frames += "\n\n" + self._packet_maker()
        types = "\n\n".join([gen.layouts.source(), frames]) + "\n"
        source = types + "\n" + body + "\n"
        namespace = self._namespace()
        namespace.update(self._types(types))
        key = ("code", body)
        code = None if self.types_cache is None else self.types_cache.get(key)
        if code is None:
            # shared code is named for its program, a switch's own for the switch
            label = (self.program.source if self.types_cache is not None or not self.name
                     else f"{self.program.source} {self.name}")
            code = compile(body + "\n", f"<p4 {label}>", "exec")
            if self.types_cache is not None:
                self.types_cache[key] = code
        exec(code, namespace)  # noqa: S102 - our own generated code
        return self._result(source, namespace, "python", "")

    def _result(self, source: str, namespace: dict[str, object], executor: str,
                note: str) -> CompiledBlocks:
        gen = self.gen
        blocks = {key: namespace[name] for key, name in self._block_names.items()}
        frames_by_block = {key: namespace[name] for key, name in self._frame_names.items()}
        actions = {aid: namespace[gen.action_fn(a)] for aid, a in self._actions.items()}
        for (table_key, aid), name in self._bound.items():
            self.tables[table_key].overrides[aid] = namespace[name]
        params = {key: slots for key, slots in self._param_slots.items()}
        return CompiledBlocks(source, namespace, blocks, frames_by_block, actions, params,
                              gen.layouts.names(), gen.cache_blocked, executor, note)

    # ---- the compiled executor -----------------------------------------------------
    def _compiled(self, body: str) -> CompiledBlocks:
        """The program as a C extension (:mod:`.compiled`): its classes as
        extension types, its functions made per switch by the module's
        ``bind(ns)`` (closures over this switch's tables and externs)."""
        source = self._cython_source(body)
        key = ("cython", source)
        module = None if self.types_cache is None else self.types_cache.get(key)
        if module is None:
            module = compiled.load(source, self.program.source)
            module._init(run_time_names(self._namespace(with_env=False)))  # type: ignore[attr-defined]
            if self.types_cache is not None:
                self.types_cache[key] = module
        namespace = self._namespace()
        namespace.update((k, v) for k, v in vars(module).items() if not k.startswith("__"))
        namespace.update(module.bind(namespace))  # type: ignore[attr-defined]
        return self._result(source, namespace, "cython", "")

    def _cython_source(self, body: str) -> str:
        frames = [(self._frame_names[key], slot_types)
                  for key, slot_types in self._frame_types.items() if key not in self._shared]
        shared: dict[str, object] = {}
        for key in self._shared:
            for slot, t in self._frame_types[key].items():
                shared.setdefault(slot, t)
        return cython_module(
            label=self.program.source, static=self._namespace(with_env=False),
            env=self.gen.env, layouts=self.gen.layouts, frames=frames,
            packet_frame=shared if self._shared else None,
            packet_maker=self._packet_maker() if self._shared else "",
            decision_paths=self.decision_paths, body=body, fn_frames=self._fn_frames,
            shared_results=self._shared_results)

    def _types(self, source: str) -> dict[str, object]:
        """The classes (headers, structs, frames) and makers ``source``
        defines, made once per source text where a ``types_cache`` is given:
        they hold no switch's state, and switches that share them share
        their attribute caches too (a fabric of many switches ran each
        packet several times slower with a set of classes per switch)."""
        key = (source, tuple(sorted(self.errors.items())))
        made = None if self.types_cache is None else self.types_cache.get(key)
        if made is None:
            ns = self._namespace(with_env=False)
            before = set(ns) | {"__builtins__"}
            code = compile(source, f"<p4 {self.program.source} types>", "exec")
            exec(code, ns)  # noqa: S102 - our own generated code
            made = {name: value for name, value in ns.items() if name not in before}
            if self.types_cache is not None:
                self.types_cache[key] = made
        return made

    # ---- pieces ------------------------------------------------------------
    def _packet_maker(self) -> str:
        """``mk_packet(ctx)``: a fresh ``PacketFrame`` for a packet, its
        first block's aggregate parameters made (headers invalid, the rest
        zero) with the makers' code inline, one call for all of them."""
        gen = self.gen
        lines = ["def mk_packet(ctx):", "    F = PacketFrame()", "    F._ctx = ctx"]
        first = self.program.package.blocks[0]
        for i, (param, role) in enumerate(zip(first.params, self.roles[0] if self.roles else ())):
            t = param.type
            if isinstance(t, StructType):
                lines.extend("    " + line for line in gen.layouts.maker_lines(t, f"v{i}"))
                lines.append(f"    F.{role} = v{i}")
            elif is_aggregate(t):
                lines.append(f"    F.{role} = {gen.layouts.new_value(t)}")
        lines.append("    return F")
        return "\n".join(lines)

    def _namespace(self, with_env: bool = True) -> dict[str, object]:
        ns: dict[str, object] = {
            "ExitBlock": rt.ExitBlock, "ParserError": rt.ParserError,
            "p4_div": rt.p4_div, "p4_mod": rt.p4_mod, "shl": rt.shl,
            "pack_bits": rt.pack_bits, "HASHES": rt.HASHES, "p4_assert": rt.p4_assert,
            "hash_with_offset": rt.hash_with_offset, "lookahead_bits": rt.lookahead_bits,
            "lookahead_header": rt.lookahead_header, "advance": rt.advance,
            "p4_verify": rt.p4_verify, "mark_to_drop": rt.mark_to_drop,
            "format_log": rt.format_log, "Struct": struct.Struct,
            "ERR_PACKET_TOO_SHORT": self.errors.get("PacketTooShort", 1),
            "ERR_HEADER_TOO_SHORT": self.errors.get("HeaderTooShort", 4),
            "ERR_NO_MATCH": self.errors.get("NoMatch", 2),
            "ERR_STACK_OUT_OF_BOUNDS": self.errors.get("StackOutOfBounds", 3),
            "ERR_PARSER_INVALID_ARGUMENT": self.errors.get("ParserInvalidArgument", 6),
            "_o": as_object,
        }
        ns.update(_STACK_HELPERS)
        if with_env:
            ns.update(self.gen.env)
        return ns

    def _frame_source(self, key: int, slots: list[str]) -> str:
        name = self._frame_names[key]
        return f"class {name}:\n    __slots__ = {tuple(['_ctx'] + slots)!r}"

    def _register_frame(self, block: ir.Control | ir.Parser, locals_: list[ir.Local]) -> None:
        gen = self.gen
        self._frame_names[id(block)] = ("PacketFrame" if id(block) in self._shared
                                        else gen.name_of(block, "Frame", block.name))
        self._block_names[id(block)] = gen.name_of(block, "blk", block.name)
        self._frame_slots[id(block)] = [gen.frame_slot(x) for x in locals_]
        self._frame_types[id(block)] = {gen.frame_slot(x): x.type for x in locals_}
        self._param_slots[id(block)] = [gen.frame_slot(x) for x in block.params]

    def _block(self, block: ir.Control | ir.Parser) -> None:
        if id(block) in self._done:
            return
        self._done.add(id(block))
        block_locals = [s.local for s in block.locals if isinstance(s, ir.VarDecl)]
        frame_locals = list(block.params) + block_locals
        self._register_frame(block, frame_locals)
        scope_ids = {id(x) for x in frame_locals}
        if isinstance(block, ir.Parser):
            self._parser(block, scope_ids)
        else:
            self._control(block, scope_ids)

    def _control(self, c: ir.Control, frame_ids: set[int]) -> None:
        gen = self.gen
        frame = self._frame_names[id(c)]
        for action in c.actions:
            self._action(action, frame_ids, frame)
        for table in c.tables:
            self._table(table, frame_ids, frame)
        gen.scope = FuncScope(frame_ids)
        fn = gen.name_of(c, "blk", c.name)
        self._fn_frames[fn] = frame

        def body() -> None:
            for s in c.locals:
                gen.stmt(s)
            gen.block(c.body)
        gen.run_fn(f"def {fn}(F):", body)

    def _action(self, action: ir.Action, frame_ids: set[int], frame: str | None = None) -> None:
        """``frame``: the frame class of the control that owns the action
        (its F), where only that control's code calls it."""
        if id(action) in self._done:
            return
        self._done.add(id(action))
        gen = self.gen
        if frame is not None:
            self._fn_frames[gen.action_fn(action)] = frame
        aid = gen.externs.action_ids[id(action)]
        self._actions[aid] = action
        outs = tuple(p for p in action.params if p.direction in ("out", "inout"))
        gen.scope = FuncScope(frame_ids, return_outs=outs)
        params = [gen.local_name(p) for p in action.params]
        header = f"def {gen.action_fn(action)}({', '.join(['F'] + params)}):"

        def body() -> None:
            for p in action.params:
                if p.direction == "out":
                    gen.emit(f"{gen.local_name(p)} = {gen.layouts.new_value(p.type)}")
            if not outs:
                gen.block(action.body)
                return
            values = f"({''.join(gen.local_name(p) + ', ' for p in outs)})"
            # ``exit`` still copies out/inout parameters back: hand them to the caller.
            gen.emit("try:")
            with gen.indent():
                gen.block(action.body)
            gen.emit("except ExitBlock:")
            with gen.indent():
                gen.emit(f"raise ExitBlock({values})")
            gen.emit(f"return {values}")
        gen.run_fn(header, body)

    def _function(self, fn: ir.Function) -> None:
        if id(fn) in self._done:
            return
        self._done.add(id(fn))
        gen = self.gen
        outs = tuple(p for p in fn.params if p.direction in ("out", "inout"))
        gen.scope = FuncScope(set(), return_outs=outs, is_function=True)
        params = [gen.local_name(p) for p in fn.params]

        def body() -> None:
            for p in fn.params:
                if p.direction == "out":
                    gen.emit(f"{gen.local_name(p)} = {gen.layouts.new_value(p.type)}")
            gen.block(fn.body)
            if outs:  # a void function may end without ``return``: still copy out
                gen.emit(f"return (None, {''.join(gen.local_name(p) + ', ' for p in outs)})")
        gen.run_fn(f"def {gen.name_of(fn, 'fn', fn.name)}({', '.join(params)}):", body)

    def _table(self, table: ir.Table, frame_ids: set[int], frame: str) -> None:
        gen = self.gen
        self._fn_frames[gen.table_fn(table)] = frame
        for ref in table.actions:
            self._action(ref.action, frame_ids)
        self._action(table.default_action.action, frame_ids)
        for entry in table.entries:
            self._action(entry.action.action, frame_ids)
        state = self.tables[id(table)]
        for ref in table.actions:
            if ref.args:
                self._bound_action(table, ref, frame_ids, frame)
        gen.scope = FuncScope(frame_ids)
        tname = gen.bind(gen.name_of(state, "T", table.local_name), state)

        def body() -> None:
            keys, sel = [], []
            for k in table.keys:
                code = gen.expr(k.expr)
                if isinstance(k.expr.type, BoolType):
                    code = f"int({code})"
                if k.match_kind == "selector":
                    sel.append(_selector_part(gen, k))
                else:
                    keys.append(code)
            key = f"({''.join(k + ', ' for k in keys)})"
            if state.exact_entries is not None:
                # All-exact: one dict lookup (entries are never falsy).
                entries = gen.bind(gen.name_of(state, "E", table.local_name), state.exact_entries)
                gen.emit(f"e = {entries}.get({key}) or {tname}.default")
            elif state.scan_memo is not None:
                memo = gen.bind(gen.name_of(state, "M", table.local_name), state.scan_memo)
                gen.emit(f"e = {memo}.get({key}) or {tname}.lookup({key})")
            else:
                gen.emit(f"e = {tname}.lookup({key})")
            if state.idle_timeout:
                gen.mark_uncacheable(f"table {table.name}'s idle timeout")
                gen.emit("if e.hit: e.last_hit_us = F._ctx.now_us")
            if state.direct_meter_kind:
                gen.mark_uncacheable(f"table {table.name}'s direct meter")
            if state.direct_counter or state.direct_meter_kind:
                gen.emit("if e.hit:")
                with gen.indent():
                    if state.direct_counter:
                        gen.emit("e.packets += 1")
                        gen.emit("e.bytes += F._ctx.length")
                        if gen.tracks_cache:
                            gen.emit("F._ctx.bumps.append(e)")  # replayed by a cached pass
                    if state.direct_meter_kind and table.direct_meter is not None:
                        amount = "1" if state.direct_meter_kind == "packets" else "F._ctx.length"
                        key = id(table.direct_meter)
                        gen.emit(f"if e.meter is not None: F._ctx.set_color({key}, "
                                 f"e.meter.execute({amount}, F._ctx.now_us))")
            if state.profile is not None:
                prof = gen.bind(gen.name_of(state.profile, "P", state.profile.name), state.profile)
                gen.emit("if e.hit:")
                with gen.indent():
                    gen.emit("if e.group is not None:")
                    with gen.indent():
                        gen.emit(f"e = {prof}.select(e.group, ({''.join(p + ', ' for p in sel)})) or e")
                    gen.emit("elif e.member is not None:")
                    with gen.indent():
                        gen.emit(f"e = {prof}.members.get(e.member, e)")
            gen.emit("if e.fn is not None: e.fn(F, *e.args)")
            gen.emit("return e")
        gen.run_fn(f"def {gen.table_fn(table)}(F):", body)

    def _bound_action(self, table: ir.Table, ref: ir.ActionRef, frame_ids: set[int],
                      frame: str) -> None:
        """``tbl_act(F, *data)``: the action with the arguments its table's
        actions list binds to its directional parameters (copy-in/copy-out
        around each run); the table runs it instead of the bare action."""
        gen = self.gen
        action = ref.action
        data = [ir.Local(p.name, p.type) for p in action.params if not p.direction]
        gen.scope = FuncScope(frame_ids)
        names = [gen.local_name(x) for x in data]
        fn = gen.name_of(ref, "bound", f"{table.local_name}_{action.local_name}")
        self._fn_frames[fn] = frame
        args = tuple(ref.args) + tuple(ir.LocalRef(x.type, x) for x in data)
        gen.run_fn(f"def {fn}({', '.join(['F'] + names)}):",
                   lambda: gen.call_with_outs(gen.action_fn(action), "F", args, action.params))
        self._bound[(id(table), gen.externs.action_ids[id(action)])] = fn

    def _parser(self, p: ir.Parser, frame_ids: set[int]) -> None:
        """A parser as one function: the states' code inlined along the
        transitions when the state graph is acyclic and small enough
        (:func:`_inline_states`), else a function per state and a loop
        that runs the one each state returns."""
        gen = self.gen
        packet = next((x for x in p.params if getattr(x.type, "name", "") == "packet_in"), None)
        if packet is None:
            raise unsupported(f"parser {p.name} without a packet_in parameter", p.loc)
        state_fn = {name: gen.name_of(st, "st", f"{p.name}_{name}") for name, st in p.states.items()}
        if "start" not in state_fn:
            raise unsupported(f"parser {p.name} without a start state", p.loc)
        bodies: dict[str, list[str]] = {}
        for name, st in p.states.items():
            gen.scope = FuncScope(frame_ids)

            def body(st: ir.ParserState = st) -> None:
                for s in st.stmts:
                    gen.stmt(s)
                self._transition(st.transition, state_fn)
            bodies[state_fn[name]] = gen.captured_lines(body)
        inlined = _inline_states(state_fn["start"], bodies)
        frame = self._frame_names[id(p)]
        if inlined is None:
            for name in state_fn.values():
                self._fn_frames[name] = frame
                gen.emit(f"def {name}(F, cur):")
                gen.emit_lines(bodies[name], "    ")
        gen.scope = FuncScope(frame_ids)
        fn = gen.name_of(p, "blk", p.name)
        self._fn_frames[fn] = frame

        def entry() -> None:
            for s in p.locals:
                gen.stmt(s)
            gen.emit(f"cur = F.{gen.frame_slot(packet)}")
            if inlined is not None:
                gen.emit_lines(inlined)
                return
            gen.emit(f"st = {state_fn['start']}")
            gen.emit("while st is not None:")
            with gen.indent():
                gen.emit("st = st(F, cur)")
        gen.run_fn(f"def {fn}(F):", entry)

    def _transition(self, t: str | ir.Select, state_fn: dict[str, str]) -> None:
        gen = self.gen

        def goto(name: str) -> str:
            if name == "accept":
                return "return None"
            if name == "reject":
                return "raise ParserError(None)"
            if name not in state_fn:
                raise unsupported(f"transition to unknown state {name}")
            return f"return {state_fn[name]}"
        if isinstance(t, str):
            gen.emit(goto(t))
            return
        names = []
        for i, k in enumerate(t.keys):
            name = f"k{i}"
            code = gen.expr(k)
            if isinstance(k.type, BoolType):
                code = f"int({code})"
            gen.emit(f"{name} = {code}")
            names.append(name)
        for case in t.cases:
            conds = []
            if len(case.keysets) == 1 and isinstance(case.keysets[0], ir.KeysetDefault):
                conds = []
            elif len(case.keysets) == 1 and isinstance(case.keysets[0], ir.KeysetValueSet):
                vs = gen.bind(gen.name_of(case.keysets[0].value_set, "VS",
                                          case.keysets[0].value_set.name),
                              self.value_sets[id(case.keysets[0].value_set)])
                conds.append(f"{vs}.match(({''.join(n + ', ' for n in names)}))")
            else:
                for name, ks in zip(names, case.keysets):
                    conds.extend(_keyset_cond(gen, name, ks, self))
            if conds:
                gen.emit(f"if {' and '.join(conds)}:")
                with gen.indent():
                    gen.emit(goto(case.next_state))
            else:
                gen.emit(goto(case.next_state))
                return
        gen.emit("raise ParserError(ERR_NO_MATCH)")


MAX_INLINED_PARSER_LINES = 3000
MAX_INLINED_PARSER_DEPTH = 60  # indentation levels (CPython's tokenizer allows 100)


def _inline_states(start: str, bodies: dict[str, list[str]]) -> list[str] | None:
    """The parser's code from state ``start`` with every ``return <state>``
    replaced by that state's code at its indentation: one function, no call
    per state. None when a state is reachable from itself (a loop, such as a
    header stack's) or the result would pass the size or depth limits (a
    state reached along several paths is copied into each)."""
    out: list[str] = []

    def expand(name: str, indent: str, path: tuple[str, ...]) -> bool:
        if name in path or len(indent) // 4 > MAX_INLINED_PARSER_DEPTH:
            return False
        for line in bodies[name]:
            text = line.lstrip(" ")
            pad = indent + line[:len(line) - len(text)]
            if text.startswith("return ") and text[7:] in bodies:
                if not expand(text[7:], pad, path + (name,)):
                    return False
            else:
                out.append(pad + text)
            if len(out) > MAX_INLINED_PARSER_LINES:
                return False
        return True
    return out if expand(start, "", ()) else None


def _keyset_cond(gen: Codegen, name: str, ks: ir.Keyset, builder: ModuleBuilder) -> list[str]:
    if isinstance(ks, ir.KeysetDefault):
        return []
    if isinstance(ks, ir.KeysetValue):
        return [f"{name} == {ks.value}"]
    if isinstance(ks, ir.KeysetMask):
        return [f"{name} & {ks.mask} == {ks.value & ks.mask}"]
    if isinstance(ks, ir.KeysetRange):
        return [f"{ks.low} <= {name} <= {ks.high}"]
    if isinstance(ks, ir.KeysetValueSet):
        vs = gen.bind(gen.name_of(ks.value_set, "VS", ks.value_set.name),
                      builder.value_sets[id(ks.value_set)])
        return [f"{vs}.match(({name},))"]
    raise unsupported(f"keyset {type(ks).__name__}")


def _selector_part(gen: Codegen, key: ir.TableKey) -> str:
    """A ``(value, width)`` pair of a selector key for BMv2-style packing."""
    code = gen.expr(key.expr)
    width = scalar_width(key.expr.type)
    if isinstance(key.expr.type, BoolType):
        code = f"int({code})"
    if isinstance(key.expr, ir.Member) and isinstance(key.expr.base.type, HeaderType):
        # BMv2 leaves fields of invalid headers out of the hash input.
        return f"(({gen.obj(code)}, {width}) if {gen.expr(key.expr.base)}._v else (0, 0))"
    return f"({code}, {width})"


def _stack_next(stack):  # type: ignore[no-untyped-def]
    if stack.nxt >= len(stack.hs):
        raise rt.ParserError(_STACK_ERR)
    return stack.hs[stack.nxt]


_STACK_ERR = 3  # error.StackOutOfBounds in core.p4's declaration order


def _stack_last(stack):  # type: ignore[no-untyped-def]
    if stack.nxt == 0:
        raise rt.ParserError(_STACK_ERR)
    return stack.hs[stack.nxt - 1]


def _stack_at(stack, index):  # type: ignore[no-untyped-def]
    if 0 <= index < len(stack.hs):
        return stack.hs[index]
    # Out of bounds: reads see an invalid element, writes go nowhere (p4c
    # turns a run-time index into a chain of ifs over the valid indices).
    return stack.hs[0].__class__()


_STACK_HELPERS = {"stack_next": _stack_next, "stack_last": _stack_last, "stack_at": _stack_at}

__all__ = ["CompiledBlocks", "ModuleBuilder", "is_aggregate", "py_ident"]
