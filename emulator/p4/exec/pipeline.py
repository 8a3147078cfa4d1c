"""The v1model architecture as BMv2's simple_switch runs it.

:class:`V1ModelPipeline` owns a compiled program and its control-plane state
(tables, action profiles, registers, counters, meters, value sets, multicast
groups, clone sessions) and pushes packets through::

    parser → verifyChecksum → ingress → [clone I2E, digest, resubmit,
    multicast, unicast or drop] → egress → [clone E2E, drop] →
    computeChecksum → deparser → [recirculate] → out

following ``SimpleSwitch::ingress_thread``/``egress_thread`` step by step
(instance types, what each copy keeps, field lists). Queueing itself belongs
to the switch target; here a packet goes from ingress straight to egress.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import Callable

from emulator.p4 import ir
from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.blocks import CompiledBlocks, ModuleBuilder
from emulator.p4.exec.codegen import unsupported
from emulator.p4.exec.decision_cache import DecisionCache, replay_bumps
from emulator.p4.exec.decisions import key_paths, touched, Uncacheable, varying_paths
from emulator.p4.exec.externs import (
    Counter, Cursor, ExitBlock, HASHES, Meter, PacketContext, ParserError, Register,
)
from emulator.p4.exec.layout import py_ident, scalar_width
from emulator.p4.exec.results import EgressItem, Output, ProcessResult, QueueInfo
from emulator.p4.exec.state import build_tables, ValueSetState
from emulator.p4.exec.tables import ActionProfile, Table
from emulator.p4.exec.v1model_externs import V1ModelLowering
from emulator.p4.types import BitsType, BoolType, EnumType, StructType, find_annotation

DROP_PORT = 511
# standard_metadata.instance_type values (simple_switch's PktInstanceType).
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
CLONE_I2E, CLONE_E2E = 0, 1
# Frame slot names of the V1Switch blocks' parameters, block by block.
ROLES = (("pkt_in", "hdr", "meta", "sm"), ("hdr", "meta"), ("hdr", "meta", "sm"),
         ("hdr", "meta", "sm"), ("hdr", "meta"), ("pkt_out", "hdr"))
INGRESS_BLOCK = 2  # the V1Switch block whose decisions are cached (.decisions)
MAX_PASSES = 16  # resubmit/recirculate loop guard per input packet
EXECUTORS = ("python", "cython")
EXECUTOR_ENV = "AIFABRIC_P4_EXECUTOR"  # the executor of pipelines not told one
# What egress finds in egress_spec: BMv2 sets it to DROP_PORT + 1, cut to 9 bits.
EGRESS_SPEC_AT_EGRESS = (DROP_PORT + 1) & 0x1FF


@dataclass
class CloneSession:
    """Replicas as (egress port, instance/rid); ``truncate_bytes`` 0 = whole packet."""

    replicas: list[tuple[int, int]]
    truncate_bytes: int = 0
    class_of_service: int = 0


class V1ModelPipeline:
    def __init__(self, program: ir.Program, *, seed: int = 0, priority_queues: int = 8,
                 clock_us: Callable[[], float] | None = None, name: str = "",
                 types_cache: dict | None = None,  # type: ignore[type-arg]
                 executor: str | None = None) -> None:
        """``name`` (a switch's) names the generated module's code (``<p4
        SOURCE NAME>``), so a profile of many switches tells them apart;
        pipelines of one program given the same ``types_cache`` (a dict)
        share the generated classes (see :class:`.blocks.ModuleBuilder`).
        ``executor``: "python", or "cython" to run the same generated code
        as a C extension (:mod:`.compiled`; where it cannot be built,
        Python, with the reason in :attr:`executor_note`); None: what
        ``$AIFABRIC_P4_EXECUTOR`` says, else "python"."""
        if executor is None:
            executor = os.environ.get(EXECUTOR_ENV) or "python"
        if executor not in EXECUTORS:
            raise ValueError(f"executor {executor!r}: one of {', '.join(EXECUTORS)}")
        if program.package.type_name != "V1Switch" or len(program.package.blocks) != 6:
            raise unsupported(f"package {program.package.type_name} (only V1Switch)")
        self.program = program
        self.priority_queues = priority_queues
        self.rng = random.Random(seed)
        start = time.monotonic()
        self._clock_us = clock_us or (lambda: (time.monotonic() - start) * 1e6)
        # The pipeline's clock in microseconds (timestamps, meters); the
        # switch target reads it to timestamp enqueues consistently.
        self.clock_us = self._clock_us
        (self.parser_block, self.verify_block, self.ingress_block, self.egress_block,
         self.compute_block, self.deparser_block) = program.package.blocks
        self._types = self._block_param_types()
        self.errors = {name: i for i, name in enumerate(program.errors)}
        self.action_ids = {id(a): i for i, a in enumerate(program.actions)}
        self.instances: dict[int, object] = {}
        self.registers: dict[str, Register] = {}
        self.counters: dict[str, Counter] = {}
        self.meters: dict[str, Meter] = {}
        self.profiles: dict[str, ActionProfile] = {}
        self._make_instances()
        self.tables: dict[str, Table] = {}
        tables_by_ir = build_tables(program, self.action_ids, self.instances, self.profiles)
        for t in program.tables:
            self.tables[t.name] = tables_by_ir[id(t)]
        self.value_sets = {vs.name: ValueSetState(vs.name, vs.size) for vs in program.value_sets}
        vs_by_ir = {id(vs): self.value_sets[vs.name] for vs in program.value_sets}
        lowering = V1ModelLowering(self.instances, self.action_ids)
        self._no_queue = QueueInfo()  # what egress is told without a queue (never changed)
        # The fields ingress decisions are keyed on (see .decisions), known
        # before the code is generated (the compiled executor reads them in C).
        decision_paths: tuple[list[str], list[str] | None] | None = None
        uncacheable: str | None = None
        try:
            fields = touched(self.ingress_block)  # type: ignore[arg-type]
            decision_paths = (key_paths(self._types, fields), self._varying(fields))  # type: ignore[arg-type]
        except Uncacheable as exc:
            uncacheable = str(exc)
        self.compiled: CompiledBlocks = ModuleBuilder(
            program, lowering, tables_by_ir, vs_by_ir, self.errors, ROLES, name=name,
            types_cache=types_cache, cached_block=INGRESS_BLOCK,
            cython=executor == "cython", driver_env=self._driver_env(),
            decision_paths=decision_paths).build()
        # The packet flow, written into the program's module (.driver):
        # ingress(port, data, instance_type=NORMAL, preserved=None) runs the
        # parser, checksum verification and ingress for one packet, then the
        # hand-off: ``result.queued`` holds what goes to egress queues
        # (clones, multicast copies, the packet itself); a resubmitted packet
        # takes another pass, with the fields its field list preserved.
        self.ingress: Callable[..., ProcessResult] = self.compiled.namespace["ingress"]  # type: ignore[assignment]
        # egress(item, queue=None) runs egress, egress cloning and the
        # deparser for a packet leaving its queue (``queue``: what the traffic
        # manager says of it; None: an empty queue, now); ``result.queued``
        # holds E2E clones (to be queued again), ``result.recirculate``
        # packets to feed back into ingress. An item goes through egress
        # once: on Cython, egress may take a unicast packet's frame out of
        # its item (``item.pkt`` None) for the next packet to reuse.
        self.egress: Callable[..., ProcessResult] = self.compiled.namespace["egress"]  # type: ignore[assignment]
        # What runs the code: "python" or "cython"; why not Cython if asked.
        self.executor = self.compiled.executor
        self.executor_note = self.compiled.executor_note
        fns = [self.compiled.block_fns[id(b)] for b in program.package.blocks]
        (self._f_parser, self._f_verify, self._f_ingress, self._f_egress, self._f_compute,
         self._f_deparser) = fns
        ns = self.compiled.namespace
        # The per-packet classes the generated driver uses (the compiled
        # executor has its own, see .driver): every packet of this pipeline's
        # is made of them.
        self._PacketContext = ns["PacketContext"]
        self._Cursor = ns["Cursor"]
        self._EgressItem = ns["EgressItem"]
        self._Frame = self.compiled.namespace["PacketFrame"]
        self._mk_packet = self.compiled.namespace["mk_packet"]  # (ctx) -> a fresh frame
        self._Meta = self.compiled.maker_for(self._types["meta"])
        self._Sm = self.compiled.maker_for(self._types["sm"])
        fns = self.compiled.action_fns
        for table in self.tables.values():
            table.bind(fns)  # type: ignore[arg-type]
        self.multicast_groups: dict[int, list[tuple[int, int]]] = {}
        self.clone_sessions: dict[int, CloneSession] = {}
        self._field_lists = self._collect_field_lists()
        # Ingress decisions per flow (see .decisions); None where the
        # program's ingress cannot be keyed (``cache_off_reason`` says why).
        self.decisions: DecisionCache | None = None
        self.cache_off_reason = self.compiled.cache_blocked or uncacheable
        if self.cache_off_reason is None and decision_paths is not None:
            accessors = self.compiled.namespace.get("_dc_accessors")
            self.decisions = DecisionCache(*decision_paths,
                                           compiled=accessors)  # type: ignore[arg-type]
        for table in self.tables.values():
            table.changed = self.forget_decisions
        for profile in self.profiles.values():
            profile.changed = self.forget_decisions

    # ---- construction ------------------------------------------------------------
    def _make_instances(self) -> None:
        for inst in self.program.instances:
            kind = inst.type.name
            args = [a.value if isinstance(a, ir.Const) else None for a in inst.ctor_args]
            if kind == "register":
                elem = inst.type.type_args[0] if inst.type.type_args else None
                if elem is not None and not isinstance(elem, (BitsType, BoolType)):
                    raise unsupported(f"a register of {elem}", inst.loc)
                width = scalar_width(elem) if elem is not None else 32
                obj: object = Register(inst.name, int(args[0]), width)  # type: ignore[arg-type]
                self.registers[inst.name] = obj  # type: ignore[assignment]
            elif kind == "counter":
                obj = Counter(inst.name, int(args[0]), _enum_name(inst.ctor_args[1]))  # type: ignore[arg-type]
                self.counters[inst.name] = obj  # type: ignore[assignment]
            elif kind == "meter":
                obj = Meter(inst.name, int(args[0]), _enum_name(inst.ctor_args[1]))  # type: ignore[arg-type]
                self.meters[inst.name] = obj  # type: ignore[assignment]
            elif kind == "direct_meter":
                obj = Meter(inst.name, 0, _enum_name(inst.ctor_args[0]))
                self.meters[inst.name] = obj  # type: ignore[assignment]
            elif kind in ("action_profile", "action_selector"):
                if kind == "action_profile":
                    obj = ActionProfile(inst.name, int(args[0]), None)  # type: ignore[arg-type]
                else:
                    algo = _enum_name(inst.ctor_args[0])
                    if algo not in HASHES:
                        raise unsupported(f"action_selector with HashAlgorithm.{algo}")
                    obj = ActionProfile(inst.name, int(args[1]), HASHES[algo],  # type: ignore[arg-type]
                                        int(args[2]))  # type: ignore[arg-type]
                self.profiles[inst.name] = obj  # type: ignore[assignment]
            elif kind == "direct_counter":
                obj = inst
            else:
                continue
            self.instances[id(inst)] = obj

    def _driver_env(self) -> dict[str, object]:
        """What the generated packet flow (:mod:`.driver`) refers to."""
        return {
            "PIPE": self, "ProcessResult": ProcessResult, "EgressItem": EgressItem,
            "Output": Output, "PacketContext": PacketContext, "Cursor": Cursor,
            "replay_bumps": replay_bumps, "_NOTHING": _NOTHING,
            "NORMAL": NORMAL, "RESUBMIT": RESUBMIT, "REPLICATION": REPLICATION,
            "RECIRC": RECIRC, "DROP_PORT": DROP_PORT, "CLONE_I2E": CLONE_I2E,
            "CLONE_E2E": CLONE_E2E, "MAX_PASSES": MAX_PASSES,
            "EGRESS_SPEC_AT_EGRESS": EGRESS_SPEC_AT_EGRESS,
        }

    def _varying(self, fields: set[tuple[str, str]]) -> list[str] | None:
        """The key paths that can differ between packets from a port when
        ingress starts (:func:`.decisions.varying_paths`); None (all of
        them) where the parser or checksum verification cannot be walked."""
        try:
            before = touched(self.parser_block) | touched(self.verify_block)  # type: ignore[arg-type]
        except Uncacheable:
            return None
        return varying_paths(self._types, fields, before)  # type: ignore[arg-type]

    def _block_param_types(self) -> dict[str, object]:
        params = self.parser_block.params
        if len(params) != 4:
            raise unsupported("a V1Switch parser without (packet_in, out H, inout M, inout standard_metadata_t)")
        return {"hdr": params[1].type, "meta": params[2].type, "sm": params[3].type}

    def _collect_field_lists(self) -> dict[int, list[str]]:
        """Field-list index → names of user-metadata fields annotated
        ``@field_list(index, …)`` (the fields resubmit/recirculate/clone keep)."""
        lists: dict[int, list[str]] = {}
        meta_t = self._types["meta"]
        if isinstance(meta_t, StructType):
            for f in meta_t.fields:
                ann = find_annotation(f.annotations, "field_list")
                if ann is None:
                    continue
                for index in ann.args:
                    # the generated class's attribute name (a field may be a Python keyword)
                    lists.setdefault(int(index), []).append(py_ident(f.name))  # type: ignore[call-overload]
        return lists

    # ---- control plane ------------------------------------------------------------
    def table(self, name: str) -> Table:
        table = self.tables.get(name)
        if table is None:
            raise RuntimeConfigError(f"unknown table {name!r}; tables: {', '.join(sorted(self.tables))}")
        return table

    def set_multicast_group(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        self.multicast_groups[group_id] = list(replicas)
        self.forget_decisions()

    def set_clone_session(self, session_id: int, session: CloneSession) -> None:
        self.clone_sessions[session_id] = session
        self.forget_decisions()

    def forget_decisions(self) -> None:
        """Empty the ingress decision cache: every control-plane write calls
        this (tables and action profiles do themselves; P4Runtime writes of
        any entity too), so the next packet runs ingress again."""
        if self.decisions is not None:
            self.decisions.forget()

    # ---- data plane -----------------------------------------------------------------
    def process(self, port: int, data: bytes) -> ProcessResult:
        """Run one packet received on ``port`` through ingress and egress
        with no queueing; returns what leaves the switch."""
        total = ProcessResult()
        pending: list[tuple[int, bytes, int, dict | None]] = [(port, data, NORMAL, None)]
        # Both lists grow while they are walked: recirculated packets and
        # E2E clones join the end, in order.
        for passes, (in_port, in_data, itype, preserved) in enumerate(pending, start=1):
            if passes > MAX_PASSES:
                total.dropped += len(pending) - passes + 1
                break
            res = self.ingress(in_port, in_data, itype, preserved)
            self._merge(total, res)
            queued = res.queued
            for item in queued:
                out = self.egress(item)
                self._merge(total, out)
                queued.extend(out.queued)
                pending.extend(out.recirculate)
        return total

    @staticmethod
    def _merge(total: ProcessResult, res: ProcessResult) -> None:
        if res.outputs:
            total.outputs.extend(res.outputs)
        total.dropped += res.dropped
        if res.digests:
            total.digests.extend(res.digests)
        if res.logs:
            total.logs.extend(res.logs)

    # ---- packet flow -------------------------------------------------------------
    def _frame(self, ctx: PacketContext) -> object:
        """A fresh packet frame: new headers (invalid), metadata (zero)."""
        f = self._mk_packet(ctx)
        ctx.sm = f.sm  # type: ignore[attr-defined]
        return f

    def _copy(self, f: object, ctx: PacketContext) -> object:
        c = self._Frame()
        c._ctx = ctx
        c.hdr = f.hdr._cp()  # type: ignore[attr-defined]
        c.meta = f.meta._cp()  # type: ignore[attr-defined]
        c.sm = f.sm._cp()  # type: ignore[attr-defined]
        return c

    def _parse(self, f: object, data: bytes) -> None:
        cur = f.pkt_in = self._Cursor(data)  # type: ignore[attr-defined]
        try:
            self._f_parser(f)
        except ParserError as exc:
            if exc.args and exc.args[0] is not None:
                f.sm.parser_error = exc.args[0]  # type: ignore[attr-defined]
        f._ctx.payload = memoryview(data)[cur.off:]  # type: ignore[attr-defined]  (a view: as the driver's)

    def _keep(self, meta: object, field_list: int) -> dict[str, int]:
        return {name: getattr(meta, name) for name in self._field_lists.get(field_list, ())}

    def _replicate(self, mgid: int, f: object, queued: list[EgressItem],
                   result: ProcessResult) -> None:
        replicas = self.multicast_groups.get(mgid)
        if not replicas:
            result.dropped += 1
            return
        for egress_port, rid in pre_order(replicas):
            c = self._copy(f, f._ctx)  # type: ignore[attr-defined]
            c.sm.egress_rid = rid  # type: ignore[attr-defined]
            queued.append(self._EgressItem(egress_port, c.sm.priority, c._ctx.length, c))  # type: ignore[attr-defined]

    def _clone_i2e(self, port: int, data: bytes, f: object, queued: list[EgressItem]) -> None:
        ctx: PacketContext = f._ctx  # type: ignore[attr-defined]
        _kind, session_id, field_list = ctx.clone  # type: ignore[misc]
        session = self.clone_sessions.get(session_id)
        if session is None:
            return
        # As simple_switch: re-parse the original packet (ingress_port kept
        # for the parse), then reset metadata but for the field list.
        cctx = self._PacketContext(len(data), ctx.now_us, self.rng)
        c = self._frame(cctx)
        c.sm.ingress_port = port  # type: ignore[attr-defined]
        self._parse(c, data)
        c.meta = self._Meta()  # type: ignore[attr-defined]
        for name, value in self._keep(f.meta, field_list).items():  # type: ignore[attr-defined]
            setattr(c.meta, name, value)  # type: ignore[attr-defined]
        c.sm = cctx.sm = self._Sm()  # type: ignore[attr-defined]
        c.sm.instance_type = INGRESS_CLONE  # type: ignore[attr-defined]
        cctx.truncate = session.truncate_bytes or None
        self._send_clone(session, c, queued)

    def _send_clone(self, session: CloneSession, c: object, queued: list[EgressItem]) -> None:
        # P4Runtime clone sessions are multicast groups in BMv2 (PI's
        # PreCloneMgr): PRE order, and every copy gets its replica's instance
        # as egress_rid (0 for a port-only ``mirroring_add`` session).
        replicas = pre_order(session.replicas)
        for i, (egress_port, rid) in enumerate(replicas):
            last = i == len(replicas) - 1
            copy = c if last else self._copy(c, c._ctx)  # type: ignore[attr-defined]
            copy.sm.egress_rid = rid  # type: ignore[attr-defined]
            queued.append(self._EgressItem(egress_port, copy.sm.priority, copy._ctx.length, copy))  # type: ignore[attr-defined]

    def _clone_e2e(self, f: object, ctx: PacketContext, queued: list[EgressItem]) -> None:
        _kind, session_id, field_list = ctx.clone  # type: ignore[misc]
        session = self.clone_sessions.get(session_id)
        if session is None:
            return
        cctx = self._PacketContext(ctx.length, ctx.now_us, self.rng)
        cctx.length_reg = ctx.length_reg
        cctx.payload = ctx.payload
        cctx.truncate = session.truncate_bytes or None
        c = self._frame(cctx)
        c.hdr = f.hdr._cp()  # type: ignore[attr-defined]
        for name, value in self._keep(f.meta, field_list).items():  # type: ignore[attr-defined]
            setattr(c.meta, name, value)  # type: ignore[attr-defined]
        c.sm.instance_type = EGRESS_CLONE  # type: ignore[attr-defined]
        self._send_clone(session, c, queued)


_NOTHING: tuple = ()


def pre_order(replicas: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Replicas in the order BMv2's PRE emits them: P4Runtime's replicas
    become one node per instance (rid) with a set of ports, and a node
    replicates to its ports in ascending order; duplicates collapse. Nodes
    keep the order their rid first appears (PI keeps them in a hash map: with
    several rids BMv2's order may differ)."""
    ports: dict[int, set[int]] = {}
    for port, rid in replicas:
        ports.setdefault(rid, set()).add(port)
    return [(port, rid) for rid, group in ports.items() for port in sorted(group)]


def _enum_name(arg: ir.Expr) -> str:
    if isinstance(arg, ir.Const) and isinstance(arg.type, EnumType):
        return arg.type.members[int(arg.value)]  # type: ignore[call-overload]
    raise unsupported("an extern constructor argument that is not an enum constant")
