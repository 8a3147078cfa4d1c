"""Builds small v1model programs directly as IR, for executor tests that do
not depend on the front end."""

from __future__ import annotations

from emulator.p4 import ir
from emulator.p4.types import (
    BOOL, VOID, Annotation, BitsType, EnumType, ErrorType, ExternType, Field, HeaderType,
    StructType,
)

B = BitsType
ERRORS = ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
          "ParserTimeout", "ParserInvalidArgument")
SM = StructType("standard_metadata_t", tuple(Field(n, B(w)) for n, w in [
    ("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32),
    ("packet_length", 32), ("enq_timestamp", 32), ("enq_qdepth", 19), ("deq_timedelta", 32),
    ("deq_qdepth", 19), ("ingress_global_timestamp", 48), ("egress_global_timestamp", 48),
    ("mcast_grp", 16), ("egress_rid", 16), ("checksum_error", 1)]) + (
    Field("parser_error", ErrorType(ERRORS)), Field("priority", B(3))))
ETH = HeaderType("ethernet_t", (Field("dstAddr", B(48)), Field("srcAddr", B(48)),
                                Field("etherType", B(16))))
IPV4 = HeaderType("ipv4_t", tuple(Field(n, B(w)) for n, w in [
    ("version", 4), ("ihl", 4), ("diffserv", 8), ("totalLen", 16), ("identification", 16),
    ("flags", 3), ("fragOffset", 13), ("ttl", 8), ("protocol", 8), ("hdrChecksum", 16),
    ("srcAddr", 32), ("dstAddr", 32)]))
HEADERS = StructType("headers", (Field("ethernet", ETH), Field("ipv4", IPV4)))
META = StructType("metadata", ())
HASH_ALGO = EnumType("HashAlgorithm", ("crc32", "crc32_custom", "crc16", "crc16_custom",
                                       "random", "identity", "csum16", "xor16"))
PKT_IN, PKT_OUT = ExternType("packet_in"), ExternType("packet_out")


def c(value: int, width: int) -> ir.Const:
    return ir.Const(B(width), value)


def ref(local: ir.Local) -> ir.LocalRef:
    return ir.LocalRef(local.type, local)


def mem(base: ir.Expr, *names: str) -> ir.Expr:
    for n in names:
        t = base.type.field(n).type  # type: ignore[union-attr]
        base = ir.Member(t, base, n)
    return base


def call(target, method: str, *args: ir.Expr, rtype=VOID, type_args=()) -> ir.ExprStmt:
    return ir.ExprStmt(ir.ExternCall(rtype, target, method, tuple(args), type_args=type_args))


def no_action() -> ir.Action:
    return ir.Action("NoAction", "NoAction", (), ir.Block())


def basic_program(extra_ingress: tuple[ir.Stmt, ...] = ()) -> tuple[ir.Program, dict]:
    """The classic basic IPv4 forwarding program (LPM on dstAddr)."""
    p_pkt, p_hdr = ir.Local("packet", PKT_IN, ""), ir.Local("hdr", HEADERS, "out")
    p_meta, p_sm = ir.Local("meta", META, "inout"), ir.Local("standard_metadata", SM, "inout")
    eth, ip = mem(ref(p_hdr), "ethernet"), mem(ref(p_hdr), "ipv4")
    parser = ir.Parser("MyParser", (p_pkt, p_hdr, p_meta, p_sm), (), {
        "start": ir.ParserState("start", (call(ref(p_pkt), "extract", eth),),
                                ir.Select((mem(eth, "etherType"),), (
                                    ir.SelectCase((ir.KeysetValue(0x800),), "parse_ipv4"),
                                    ir.SelectCase((ir.KeysetDefault(),), "accept")))),
        "parse_ipv4": ir.ParserState("parse_ipv4", (call(ref(p_pkt), "extract", ip),), "accept"),
    })
    v_hdr, v_meta = ir.Local("hdr", HEADERS, "inout"), ir.Local("meta", META, "inout")
    verify = ir.Control("MyVerifyChecksum", (v_hdr, v_meta), (), ir.Block())
    i_hdr, i_meta = ir.Local("hdr", HEADERS, "inout"), ir.Local("meta", META, "inout")
    i_sm = ir.Local("standard_metadata", SM, "inout")
    ieth, iip = mem(ref(i_hdr), "ethernet"), mem(ref(i_hdr), "ipv4")
    drop = ir.Action("MyIngress.drop", "drop", (), ir.Block((
        call(None, "mark_to_drop", ref(i_sm)),)))
    a_dst, a_port = ir.Local("dstAddr", B(48)), ir.Local("port", B(9))
    forward = ir.Action("MyIngress.ipv4_forward", "ipv4_forward", (a_dst, a_port), ir.Block((
        ir.Assign(mem(ref(i_sm), "egress_spec"), ref(a_port)),
        ir.Assign(mem(ieth, "srcAddr"), mem(ieth, "dstAddr")),
        ir.Assign(mem(ieth, "dstAddr"), ref(a_dst)),
        ir.Assign(mem(iip, "ttl"), ir.Binary(B(8), "-", mem(iip, "ttl"), c(1, 8))),
    )))
    noact = no_action()
    table = ir.Table("MyIngress.ipv4_lpm", "ipv4_lpm",
                     (ir.TableKey(mem(iip, "dstAddr"), "lpm", "hdr.ipv4.dstAddr"),),
                     (ir.ActionRef(forward), ir.ActionRef(drop), ir.ActionRef(noact)),
                     ir.BoundAction(drop, ()), size=1024)
    ingress = ir.Control("MyIngress", (i_hdr, i_meta, i_sm), (), ir.Block((
        ir.If(ir.IsValid(BOOL, iip), ir.Block((ir.TableApply(table),) + extra_ingress)),)),
        actions=(drop, forward, noact), tables=(table,))
    e_hdr, e_meta = ir.Local("hdr", HEADERS, "inout"), ir.Local("meta", META, "inout")
    e_sm = ir.Local("standard_metadata", SM, "inout")
    egress = ir.Control("MyEgress", (e_hdr, e_meta, e_sm), (), ir.Block())
    c_hdr, c_meta = ir.Local("hdr", HEADERS, "inout"), ir.Local("meta", META, "inout")
    cip = mem(ref(c_hdr), "ipv4")
    fields = [mem(cip, n) for n in ("version", "ihl", "diffserv", "totalLen", "identification",
                                   "flags", "fragOffset", "ttl", "protocol", "srcAddr", "dstAddr")]
    compute = ir.Control("MyComputeChecksum", (c_hdr, c_meta), (), ir.Block((
        call(None, "update_checksum", ir.IsValid(BOOL, cip),
             ir.ListExpr(B(0), tuple(fields)), mem(cip, "hdrChecksum"),
             ir.Const(HASH_ALGO, HASH_ALGO.members.index("csum16"))),)))
    d_pkt, d_hdr = ir.Local("packet", PKT_OUT), ir.Local("hdr", HEADERS, "in")
    deparser = ir.Control("MyDeparser", (d_pkt, d_hdr), (), ir.Block((
        call(ref(d_pkt), "emit", mem(ref(d_hdr), "ethernet")),
        call(ref(d_pkt), "emit", mem(ref(d_hdr), "ipv4")))))
    program = ir.Program("basic.p4", ir.Package("V1Switch", (parser, verify, ingress, egress,
                                                             compute, deparser)),
                         {"headers": HEADERS}, ERRORS, actions=(noact, drop, forward),
                         tables=(table,))
    return program, {"forward": forward, "drop": drop, "table": table, "ingress": ingress,
                     "i_hdr": i_hdr, "i_sm": i_sm, "i_meta": i_meta}


__all__ = ["Annotation", "basic_program", "c", "call", "mem", "ref"]
