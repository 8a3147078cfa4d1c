"""A v1model program that uses what the compiled executor must get exactly
right (see emulator/p4/exec/layout.py): fields wider than 64 bits, a 64-bit
field across nine bytes, signed arithmetic, saturating operators, shifts by
run-time amounts, concatenations and casts past 64 bits, bools, conditional
expressions, a header stack, a header union, a varbit, registers, counters,
hashes and checksums over more than 64 bits, digests, logs, random numbers,
clones, resubmit, recirculate and multicast; and the packets to push through
it (random, and shaped to reach every branch)."""

from __future__ import annotations

import random

from emulator.p4.exec.pipeline import CloneSession, V1ModelPipeline
from emulator.p4.frontend import compile_text

KITCHEN_SINK = r"""
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header wide_t {
    bit<3> pre; bit<64> odd; bit<5> post; bit<128> big; int<8> s8; int<16> s16;
    bit<8> amt; bit<8> sel; bit<32> a; bit<32> b; bit<1> flag; bit<7> pad;
}
header tag_t { bit<8> kind; bit<8> len; }
header a_t { bit<16> x; }
header b_t { bit<32> y; }
header_union u_t { a_t a; b_t b; }
header opt_t { bit<8> len; varbit<64> data; }
header odd_t { bit<5> a; bit<64> v; bit<3> b; bit<48> m; bit<9> p; bit<7> q; }
header ip_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> total_len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst;
}

struct headers {
    eth_t eth; wide_t w; tag_t[3] tags; u_t u; opt_t opt; ip_t ip; odd_t odd;
}
struct dg_t { bit<128> big; int<16> s16; bool flag; }
struct metadata {
    @field_list(1) bit<8> passes;
    bit<128> acc; bool b; int<32> sacc; bit<64> h64; bit<16> h16;
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x88B5: wide;
            0x0800: ip;
            0x88B6: odd;
            default: accept;
        }
    }
    state wide {
        pkt.extract(hdr.w);
        transition select(hdr.w.sel[1:0]) {
            0: tags;
            1: ua;
            2: ub;
            default: opt;
        }
    }
    state tags {
        pkt.extract(hdr.tags.next);
        transition select(hdr.tags.last.kind) {
            0: accept;
            default: tags;
        }
    }
    state ua { pkt.extract(hdr.u.a); transition accept; }
    state ub { pkt.extract(hdr.u.b); transition accept; }
    state opt {
        bit<8> n = pkt.lookahead<bit<8>>();
        pkt.extract(hdr.opt, (bit<32>)(n & 7) * 8);
        transition accept;
    }
    state ip { pkt.extract(hdr.ip); transition accept; }
    state odd { pkt.extract(hdr.odd); transition accept; }
}

control VC(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ip.isValid(),
            { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.total_len, hdr.ip.id,
              hdr.ip.flags, hdr.ip.frag, hdr.ip.ttl, hdr.ip.proto, hdr.ip.src, hdr.ip.dst },
            hdr.ip.csum, HashAlgorithm.csum16);
    }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<64>>(8) r64;
    register<bit<128>>(4) r128;
    counter(16, CounterType.packets_and_bytes) c;

    action fwd(bit<9> port) { sm.egress_spec = port; }
    action mix(bit<128> k, int<8> d) {
        hdr.w.big = hdr.w.big ^ k;
        hdr.w.s8 = hdr.w.s8 |+| d;
    }
    table t {
        key = { hdr.w.big : exact; hdr.w.s8 : exact; }
        actions = { mix; NoAction; }
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        meta.passes = meta.passes + 1;
        c.count((bit<32>)sm.ingress_port);
        if (hdr.w.isValid()) {
            t.apply();
            bit<64> o = hdr.w.odd;
            hdr.w.odd = (o << 3) + (o >> hdr.w.amt) - (o >> 61);
            hdr.w.post = hdr.w.post |-| (bit<5>)hdr.w.amt;
            hdr.w.pre = hdr.w.pre |+| 3w5;
            hdr.w.s16 = hdr.w.s16 - (int<16>)hdr.w.s8 * 16s3;
            hdr.w.s8 = -hdr.w.s8;
            meta.sacc = (int<32>)hdr.w.s16 + (int<32>)hdr.w.s8 - 32s100000;
            meta.acc = hdr.w.big + ((bit<128>)hdr.w.a << 96) + (bit<128>)hdr.w.odd;
            hdr.w.big = hdr.w.a ++ hdr.w.b ++ hdr.w.odd;
            hdr.w.a = hdr.w.a * hdr.w.b + 32w7;
            hdr.w.b = (hdr.w.b << (bit<8>)(hdr.w.amt & 31)) | (hdr.w.b >> hdr.w.amt);
            meta.b = hdr.w.flag == 1;
            hdr.w.flag = meta.b ? 1w0 : 1w1;
            hdr.w.sel = hdr.w.sel[7:4] ++ hdr.w.amt[3:0];
            hash(meta.h64, HashAlgorithm.crc32, 64w0, { hdr.w.big, hdr.w.s8, meta.b }, 64w1 << 40);
            hash(meta.h16, HashAlgorithm.crc16, 16w0, { hdr.w.odd, hdr.w.pre }, 16w1000);
            /* one header's fields of 8, 4, 1 and 4 whole bytes: packed by a C
               function, compiled */
            hash(meta.h16, HashAlgorithm.crc16, meta.h16, { hdr.w.odd, hdr.w.a, hdr.w.amt, hdr.w.b },
                 16w1000);
            hdr.w.sel = hdr.w.sel ^ (bit<8>)meta.h16;  /* (seen in the packet) */
            bit<64> old;
            r64.read(old, (bit<32>)hdr.w.amt & 7);
            r64.write((bit<32>)hdr.w.amt & 7, old + hdr.w.odd + meta.h64);
            bit<128> oldw;
            r128.read(oldw, (bit<32>)hdr.w.sel & 3);
            r128.write((bit<32>)hdr.w.sel & 3, oldw ^ meta.acc);
            bit<32> rnd;
            random(rnd, 32w10, 32w1000);
            hdr.w.a = hdr.w.a + rnd;
            if (hdr.w.amt == 77) {
                digest<dg_t>(1, { meta.acc, hdr.w.s16, meta.b });
            }
            if (hdr.w.amt == 78) {
                log_msg("odd={} s16={}", { hdr.w.odd, hdr.w.s16 });
            }
            if (hdr.w.amt == 79 && meta.passes < 3) {
                resubmit_preserving_field_list(1);
            }
            if (hdr.w.amt == 80) {
                clone_preserving_field_list(CloneType.I2E, 5, 1);
            }
            if (hdr.w.amt == 81) {
                sm.mcast_grp = 3;
            }
            if (hdr.w.amt == 82) {
                mark_to_drop(sm);
            }
            if (hdr.w.amt == 83) {
                truncate(20);
            }
        }
        if (hdr.tags[0].isValid()) {
            hdr.tags[0].len = hdr.tags[0].len + (bit<8>)(bit<1>)hdr.tags[1].isValid();
            if (hdr.tags[1].isValid()) {
                hdr.tags.pop_front(1);
            } else {
                hdr.tags.push_front(1);
                hdr.tags[0].setValid();
                hdr.tags[0].kind = 9;
            }
        }
        if (hdr.u.a.isValid()) {
            hdr.u.b.setValid();
            hdr.u.b.y = (bit<32>)hdr.u.a.x << 9;
        }
        if (hdr.odd.isValid()) {
            hdr.odd.v = hdr.odd.v + (bit<64>)hdr.odd.m * 64w3;
            hdr.odd.m = hdr.odd.m ^ hdr.odd.v[47:0];
            hdr.odd.a = hdr.odd.a + 1;
            hdr.odd.p = hdr.odd.p + (bit<9>)hdr.odd.q;
            sm.egress_spec = hdr.odd.p;
        }
        if (hdr.ip.isValid()) {
            hdr.ip.ttl = hdr.ip.ttl - 1;
            sm.egress_spec = (bit<9>)hdr.ip.dst[3:0];
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.w.isValid()) {
            hdr.w.pad = (bit<7>)sm.egress_rid + (bit<7>)sm.instance_type;
            if (hdr.w.amt == 84 && meta.passes < 2) {
                recirculate_preserving_field_list(1);
            }
            if (hdr.w.amt == 85 && sm.instance_type == 0) {
                clone_preserving_field_list(CloneType.E2E, 5, 1);
            }
        }
    }
}

control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ip.isValid(),
            { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.total_len, hdr.ip.id,
              hdr.ip.flags, hdr.ip.frag, hdr.ip.ttl, hdr.ip.proto, hdr.ip.src, hdr.ip.dst },
            hdr.ip.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def pipeline(executor: str, seed: int = 3) -> V1ModelPipeline:
    """The program on ``executor``, with a table entry, a clone session
    and a multicast group, on a step clock."""
    steps = iter(range(1, 1 << 30))
    pipe = V1ModelPipeline(compile_text(KITCHEN_SINK, "kitchen_sink.p4"), seed=seed,
                           clock_us=lambda: float(next(steps)), executor=executor)
    t = pipe.table("I.t")
    t.insert(t.make_entry("I.mix", [0xFFFF << 100, 0xFD], t.canonical_key([(1 << 127) | 5, 7])))
    pipe.set_clone_session(5, CloneSession([(4, 0), (6, 2)]))
    pipe.set_multicast_group(3, [(2, 1), (3, 1), (5, 2)])
    return pipe


def packets(count: int, seed: int = 11) -> list[tuple[int, bytes]]:
    """(ingress port, frame): every branch of the program's parser and
    ingress, with random field values."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        eth = bytes(12)
        kind = i % 7
        if kind == 6:  # a header whose 64-bit field spans nine bytes
            out.append((rng.randrange(8), eth + b"\x88\xb6" + rng.randbytes(rng.choice([17, 16, 5, 20]))))
            continue
        if kind == 5:  # IPv4 (a valid checksum half of the time)
            out.append((rng.randrange(8), eth + b"\x08\x00" + _ip(rng) + rng.randbytes(rng.randrange(30))))
            continue
        wide = bytearray(rng.randbytes(39))
        wide[28] = rng.choice([77, 78, 79, 80, 81, 82, 83, 84, 85, rng.randrange(256),
                               rng.randrange(64, 256)])  # amt
        wide[29] = (wide[29] & 0xFC) | (kind & 3)        # sel: which branch
        if i % 17 == 0:  # the table's entry: big = 1 << 127 | 5, s8 = 7
            wide[9:25] = ((1 << 127) | 5).to_bytes(16, "big")
            wide[25] = 7
        if kind == 0:    # tags until a zero kind
            tail = b"".join(bytes([rng.randrange(1, 256), rng.randrange(256)])
                            for _ in range(rng.randrange(3))) + b"\x00\x05"
        elif kind == 4:  # the varbit: its length byte first
            n = rng.randrange(10)
            tail = bytes([n]) + rng.randbytes((n & 7) + rng.randrange(3))
        else:
            tail = rng.randbytes(rng.randrange(8))
        if i % 23 == 0:
            tail, wide = b"", wide[:rng.randrange(39)]  # too short: parser errors
        out.append((rng.randrange(8), eth + b"\x88\xb5" + bytes(wide) + tail))
    return out


def _ip(rng: random.Random) -> bytes:
    from emulator.p4.exec.externs import csum16
    ip = bytearray(rng.randbytes(20))
    ip[0] = 0x45
    ip[10:12] = b"\x00\x00"
    if rng.random() < 0.5:
        ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    return bytes(ip)


def observe(pipe: V1ModelPipeline, port: int, frame: bytes) -> tuple:
    """Everything a packet's trip shows: outputs, drops, digests (their
    fields), logs."""
    res = pipe.process(port, frame)
    digests = [(name, tuple(getattr(v, f) for f in ("big", "s16", "flag")))
               for name, v in res.digests]
    return ([(o.port, o.data, o.instance_type, o.priority) for o in res.outputs],
            res.dropped, digests, list(res.logs))


def state(pipe: V1ModelPipeline) -> tuple:
    """Registers and counters."""
    return (tuple(tuple(r.values) for _, r in sorted(pipe.registers.items())),
            tuple((tuple(c.packets), tuple(c.bytes)) for _, c in sorted(pipe.counters.items())))
