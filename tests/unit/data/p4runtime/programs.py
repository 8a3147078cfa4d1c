"""Hand-built IR programs for the P4Runtime server tests, and the device
config loader the tests give the server.

``kitchen_program()`` exercises every P4Runtime entity the server supports;
its P4Info is ``kitchen.p4info.txtpb`` next to this file. In P4 it reads::

    @controller_header("packet_out") header packet_out_header_t { bit<9> egress_port; bit<7> _pad; }
    @controller_header("packet_in")  header packet_in_header_t  { bit<9> ingress_port; bit<7> _pad; }
    struct learn_t { bit<48> srcAddr; bit<9> ingress_port; }

    parser MyParser(...) {
        value_set<bit<16>>(4) vs_types;
        state start { transition select(sm.ingress_port) { 64: parse_packet_out; default: parse_ethernet; } }
        state parse_packet_out { packet.extract(hdr.packet_out); transition parse_ethernet; }
        state parse_ethernet { packet.extract(hdr.ethernet);
            transition select(hdr.ethernet.etherType) { 0x800: parse_ipv4; vs_types: parse_ipv4; default: accept; } }
        state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
    }
    control MyIngress(...) {
        counter(16, CounterType.packets_and_bytes) port_counter;
        register<bit<32>>(16) last_len;
        meter(16, MeterType.packets) port_meter;
        direct_counter(CounterType.packets_and_bytes) acl_counter;
        direct_meter<bit<2>>(MeterType.bytes) acl_meter;
        action_selector(HashAlgorithm.crc16, 64, 14) ecmp_selector;
        action drop() { mark_to_drop(sm); }
        action set_port(bit<9> port) { sm.egress_spec = port; }
        action to_cpu() { sm.egress_spec = 64; }
        action set_mcast(bit<16> grp) { sm.mcast_grp = grp; }
        table acl { key = { sm.ingress_port: exact; hdr.ethernet.dstAddr: ternary;
                            hdr.ethernet.etherType: range; hdr.ipv4.protocol: optional; }
                    actions = { set_port; to_cpu; set_mcast; drop; NoAction; }
                    counters = acl_counter; meters = acl_meter; size = 64; default_action = NoAction(); }
        table ecmp { key = { hdr.ipv4.dstAddr: exact; hdr.ipv4.srcAddr: selector; }
                     actions = { set_port; @defaultonly NoAction; }
                     implementation = ecmp_selector; size = 32; }
        table fixed { key = { hdr.ethernet.etherType: exact; } actions = { drop; NoAction; }
                      const default_action = NoAction(); const entries = { 0x88cc: drop(); } size = 8; }
        table route { key = { hdr.ipv4.dstAddr: lpm; }
                      actions = { @tableonly set_port; @defaultonly drop; NoAction; }
                      default_action = NoAction(); size = 2; }
        apply {
            if (hdr.packet_out.isValid()) {
                sm.egress_spec = hdr.packet_out.egress_port; hdr.packet_out.setInvalid();
            } else {
                port_counter.count((bit<32>) sm.ingress_port);
                last_len.write((bit<32>) sm.ingress_port, sm.packet_length);
                digest<learn_t>(1, {hdr.ethernet.srcAddr, sm.ingress_port});
                fixed.apply(); acl.apply();
                if (hdr.ipv4.isValid()) { route.apply(); ecmp.apply(); }
                if (sm.egress_spec == 64) { hdr.packet_in.setValid(); hdr.packet_in.ingress_port = sm.ingress_port; }
            }
        }
    }
    control MyDeparser(...) { apply { packet.emit(hdr.packet_in); packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); } }
"""

from __future__ import annotations

from pathlib import Path

from p4.config.v1 import p4info_pb2

from emulator.p4 import ir
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.types import Annotation, EnumType, ExternType, Field, HeaderType, StructType
from tests.unit.p4.irkit import (
    BOOL, ERRORS, ETH, HASH_ALGO, IPV4, META, PKT_IN, PKT_OUT, SM, B, basic_program, c, call,
    mem, no_action, ref,
)

DATA = Path(__file__).parent
KITCHEN_CPU_PORT = 64
PACKET_OUT = HeaderType("packet_out_header_t", (Field("egress_port", B(9)), Field("_pad", B(7))),
                        (Annotation("controller_header", ("packet_out",)),))
PACKET_IN = HeaderType("packet_in_header_t", (Field("ingress_port", B(9)), Field("_pad", B(7))),
                       (Annotation("controller_header", ("packet_in",)),))
HEADERS = StructType("headers", (Field("packet_out", PACKET_OUT), Field("packet_in", PACKET_IN),
                                 Field("ethernet", ETH), Field("ipv4", IPV4)))
LEARN = StructType("learn_t", (Field("srcAddr", B(48)), Field("ingress_port", B(9))))
COUNTER_TYPE = EnumType("CounterType", ("packets", "bytes", "packets_and_bytes"))
METER_TYPE = EnumType("MeterType", ("packets", "bytes"))


def _instance(name: str, kind: str, *args: ir.Expr, type_args: tuple = ()) -> ir.Instance:
    return ir.Instance(name, name.split(".")[-1], ExternType(kind, type_args), tuple(args))


def _parser(vs: ir.ValueSet) -> ir.Parser:
    p_pkt, p_hdr = ir.Local("packet", PKT_IN, ""), ir.Local("hdr", HEADERS, "out")
    p_meta, p_sm = ir.Local("meta", META, "inout"), ir.Local("standard_metadata", SM, "inout")
    hdr = ref(p_hdr)
    eth = mem(hdr, "ethernet")
    return ir.Parser("MyParser", (p_pkt, p_hdr, p_meta, p_sm), (), {
        "start": ir.ParserState("start", (), ir.Select((mem(ref(p_sm), "ingress_port"),), (
            ir.SelectCase((ir.KeysetValue(KITCHEN_CPU_PORT),), "parse_packet_out"),
            ir.SelectCase((ir.KeysetDefault(),), "parse_ethernet")))),
        "parse_packet_out": ir.ParserState(
            "parse_packet_out", (call(ref(p_pkt), "extract", mem(hdr, "packet_out")),),
            "parse_ethernet"),
        "parse_ethernet": ir.ParserState(
            "parse_ethernet", (call(ref(p_pkt), "extract", eth),),
            ir.Select((mem(eth, "etherType"),), (
                ir.SelectCase((ir.KeysetValue(0x800),), "parse_ipv4"),
                ir.SelectCase((ir.KeysetValueSet(vs),), "parse_ipv4"),
                ir.SelectCase((ir.KeysetDefault(),), "accept")))),
        "parse_ipv4": ir.ParserState(
            "parse_ipv4", (call(ref(p_pkt), "extract", mem(hdr, "ipv4")),), "accept"),
    }, value_sets=(vs,))


def kitchen_program() -> ir.Program:
    vs = ir.ValueSet("MyParser.vs_types", B(16), 4)
    parser = _parser(vs)
    v_hdr, v_meta = ir.Local("hdr", HEADERS, "inout"), ir.Local("meta", META, "inout")
    verify = ir.Control("MyVerifyChecksum", (v_hdr, v_meta), (), ir.Block())
    i_hdr, i_meta = ir.Local("hdr", HEADERS, "inout"), ir.Local("meta", META, "inout")
    i_sm = ir.Local("standard_metadata", SM, "inout")
    hdr, sm = ref(i_hdr), ref(i_sm)
    eth, ip, pout, pin = (mem(hdr, n) for n in ("ethernet", "ipv4", "packet_out", "packet_in"))

    port_counter = _instance("MyIngress.port_counter", "counter", c(16, 32),
                             ir.Const(COUNTER_TYPE, 2))
    last_len = _instance("MyIngress.last_len", "register", c(16, 32), type_args=(B(32),))
    port_meter = _instance("MyIngress.port_meter", "meter", c(16, 32), ir.Const(METER_TYPE, 0))
    acl_counter = _instance("MyIngress.acl_counter", "direct_counter", ir.Const(COUNTER_TYPE, 2))
    acl_meter = _instance("MyIngress.acl_meter", "direct_meter", ir.Const(METER_TYPE, 1),
                          type_args=(B(2),))
    selector = _instance("MyIngress.ecmp_selector", "action_selector",
                         ir.Const(HASH_ALGO, HASH_ALGO.members.index("crc16")), c(64, 32),
                         c(14, 32))
    instances = (port_counter, last_len, port_meter, acl_counter, acl_meter, selector)

    drop = ir.Action("MyIngress.drop", "drop", (), ir.Block((call(None, "mark_to_drop", sm),)))
    a_port = ir.Local("port", B(9))
    set_port = ir.Action("MyIngress.set_port", "set_port", (a_port,), ir.Block((
        ir.Assign(mem(sm, "egress_spec"), ref(a_port)),)))
    to_cpu = ir.Action("MyIngress.to_cpu", "to_cpu", (), ir.Block((
        ir.Assign(mem(sm, "egress_spec"), c(KITCHEN_CPU_PORT, 9)),)))
    a_grp = ir.Local("grp", B(16))
    set_mcast = ir.Action("MyIngress.set_mcast", "set_mcast", (a_grp,), ir.Block((
        ir.Assign(mem(sm, "mcast_grp"), ref(a_grp)),)))
    noact = no_action()
    tableonly, defaultonly = (Annotation("tableonly"),), (Annotation("defaultonly"),)

    acl = ir.Table("MyIngress.acl", "acl", (
        ir.TableKey(mem(sm, "ingress_port"), "exact", "standard_metadata.ingress_port"),
        ir.TableKey(mem(eth, "dstAddr"), "ternary", "hdr.ethernet.dstAddr"),
        ir.TableKey(mem(eth, "etherType"), "range", "hdr.ethernet.etherType"),
        ir.TableKey(mem(ip, "protocol"), "optional", "hdr.ipv4.protocol")),
        tuple(ir.ActionRef(a) for a in (set_port, to_cpu, set_mcast, drop, noact)),
        ir.BoundAction(noact, ()), size=64, direct_counter=acl_counter, direct_meter=acl_meter)
    ecmp = ir.Table("MyIngress.ecmp", "ecmp", (
        ir.TableKey(mem(ip, "dstAddr"), "exact", "hdr.ipv4.dstAddr"),
        ir.TableKey(mem(ip, "srcAddr"), "selector", "hdr.ipv4.srcAddr")),
        (ir.ActionRef(set_port), ir.ActionRef(noact, defaultonly)),
        ir.BoundAction(noact, ()), size=32, implementation=selector)
    fixed = ir.Table("MyIngress.fixed", "fixed", (
        ir.TableKey(mem(eth, "etherType"), "exact", "hdr.ethernet.etherType"),),
        (ir.ActionRef(drop), ir.ActionRef(noact)), ir.BoundAction(noact, ()),
        default_action_const=True, size=8, entries_const=True,
        entries=(ir.TableEntry((ir.KeysetValue(0x88CC),), ir.BoundAction(drop, ())),))
    route = ir.Table("MyIngress.route", "route", (
        ir.TableKey(mem(ip, "dstAddr"), "lpm", "hdr.ipv4.dstAddr"),),
        (ir.ActionRef(set_port, tableonly), ir.ActionRef(drop, defaultonly), ir.ActionRef(noact)),
        ir.BoundAction(noact, ()), size=2)
    tables = (fixed, acl, route, ecmp)

    port32 = ir.Cast(B(32), mem(sm, "ingress_port"))
    learn = ir.StructExpr(LEARN, (("srcAddr", mem(eth, "srcAddr")),
                                  ("ingress_port", mem(sm, "ingress_port"))))
    body = ir.Block((ir.If(ir.IsValid(BOOL, pout), ir.Block((
        ir.Assign(mem(sm, "egress_spec"), mem(pout, "egress_port")),
        ir.HeaderMethod(pout, "setInvalid"))), ir.Block((
            call(port_counter, "count", port32),
            call(last_len, "write", port32, mem(sm, "packet_length")),
            call(None, "digest", c(1, 32), learn, type_args=(LEARN,)),
            ir.TableApply(fixed), ir.TableApply(acl),
            ir.If(ir.IsValid(BOOL, ip), ir.Block((ir.TableApply(route), ir.TableApply(ecmp)))),
            ir.If(ir.Binary(BOOL, "==", mem(sm, "egress_spec"), c(KITCHEN_CPU_PORT, 9)), ir.Block((
                ir.HeaderMethod(pin, "setValid"),
                ir.Assign(mem(pin, "ingress_port"), mem(sm, "ingress_port")),
                ir.Assign(mem(pin, "_pad"), c(0, 7)))))))),))
    actions = (noact, drop, set_port, to_cpu, set_mcast)
    ingress = ir.Control("MyIngress", (i_hdr, i_meta, i_sm), (), body, actions=actions,
                         tables=tables, instances=instances)
    e_hdr, e_meta = ir.Local("hdr", HEADERS, "inout"), ir.Local("meta", META, "inout")
    egress = ir.Control("MyEgress", (e_hdr, e_meta, ir.Local("standard_metadata", SM, "inout")),
                        (), ir.Block())
    compute = ir.Control("MyComputeChecksum", (ir.Local("hdr", HEADERS, "inout"),
                                               ir.Local("meta", META, "inout")), (), ir.Block())
    d_pkt, d_hdr = ir.Local("packet", PKT_OUT), ir.Local("hdr", HEADERS, "in")
    deparser = ir.Control("MyDeparser", (d_pkt, d_hdr), (), ir.Block(tuple(
        call(ref(d_pkt), "emit", mem(ref(d_hdr), n)) for n in ("packet_in", "ethernet", "ipv4"))))
    return ir.Program("kitchen.p4", ir.Package("V1Switch", (parser, verify, ingress, egress,
                                                            compute, deparser)),
                      {"headers": HEADERS, "learn_t": LEARN}, ERRORS, actions=actions,
                      tables=tables, instances=instances, value_sets=(vs,))


def load_device_config(p4info: p4info_pb2.P4Info, device_config: bytes) -> V1ModelPipeline:
    """The test loader: the device config names the program."""
    if device_config == b"basic":
        return V1ModelPipeline(basic_program()[0])
    if device_config == b"kitchen":
        return V1ModelPipeline(kitchen_program())
    raise ValueError(f"unknown device config {device_config[:20]!r}")
