/*
 * A leaf switch of a RoCEv2 fabric (about 400 lines, used to time the
 * parser): L2/L3 forwarding, ECMP over spines with an action selector,
 * RoCEv2 classification into priorities, RED-style ECN marking from a
 * controller-written table, per-port queue statistics in registers,
 * PFC-like pause generation by cloning, packet-in/out for the controller
 * and an ACL with constant entries.
 */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255
#define NUM_PORTS 64
#define NUM_PRIORITIES 8
#define PFC_SESSION 500

const bit<16> ETHERTYPE_IPV4    = 0x0800;
const bit<16> ETHERTYPE_VLAN    = 0x8100;
const bit<16> ETHERTYPE_MACCTRL = 0x8808;
const bit<16> PFC_OPCODE        = 0x0101;
const bit<8>  PROTO_UDP         = 17;
const bit<8>  PROTO_TCP         = 6;
const bit<16> ROCE_V2_PORT      = 4791;
const bit<8>  BTH_OPCODE_CNP    = 0x81;
const bit<32> INSTANCE_NORMAL   = 0;
const bit<32> INSTANCE_I2E      = 1;

typedef bit<9>  port_t;
typedef bit<48> mac_t;
typedef bit<32> ipv4_addr_t;
typedef bit<12> vlan_id_t;
typedef bit<3>  prio_t;

@controller_header("packet_in")
header packet_in_t {
    port_t ingress_port;
    bit<7> reason;
}

@controller_header("packet_out")
header packet_out_t {
    port_t egress_port;
    bit<7> _pad;
}

header ethernet_t {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

header vlan_t {
    bit<3>    pcp;
    bit<1>    dei;
    vlan_id_t vid;
    bit<16>   ether_type;
}

header pfc_t {
    bit<16> opcode;
    bit<8>  reserved;
    bit<8>  class_enable;
    bit<16> time0;
    bit<16> time1;
    bit<16> time2;
    bit<16> time3;
    bit<16> time4;
    bit<16> time5;
    bit<16> time6;
    bit<16> time7;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src;
    ipv4_addr_t dst;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq;
    bit<32> ack;
    bit<4>  data_offset;
    bit<4>  reserved;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

header bth_t {
    bit<8>  opcode;
    bit<1>  solicited;
    bit<1>  mig_req;
    bit<2>  pad_count;
    bit<4>  version;
    bit<16> pkey;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  reserved;
    bit<24> dest_qp;
    bit<1>  ack_req;
    bit<7>  reserved2;
    bit<24> psn;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
    vlan_t       vlan;
    pfc_t        pfc;
    ipv4_t       ipv4;
    udp_t        udp;
    tcp_t        tcp;
    bth_t        bth;
}

struct ecn_profile_t {
    bit<19> kmin;
    bit<19> kmax;
}

struct metadata_t {
    bit<16>     l4_src_port;
    bit<16>     l4_dst_port;
    prio_t      priority;
    bit<1>      is_roce;
    bit<1>      is_cnp;
    bit<1>      mark_ce;
    bit<19>     kmin;
    bit<19>     kmax;
    bit<8>      drop_chance;
    bit<8>      random_value;
    @field_list(1)
    port_t      pause_port;
    @field_list(1)
    prio_t      pause_priority;
    bit<32>     qdepth_index;
}

error { UnsupportedVlanStack }

parser LeafParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_MACCTRL: parse_pfc;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        verify(hdr.vlan.ether_type != ETHERTYPE_VLAN, error.UnsupportedVlanStack);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_pfc {
        transition select(packet.lookahead<bit<16>>()) {
            PFC_OPCODE: extract_pfc;
            default: accept;
        }
    }

    state extract_pfc {
        packet.extract(hdr.pfc);
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol, hdr.ipv4.frag_offset, hdr.ipv4.ihl) {
            (PROTO_UDP, 0, 5): parse_udp;
            (PROTO_TCP, 0, 5): parse_tcp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src_port = hdr.udp.src_port;
        meta.l4_dst_port = hdr.udp.dst_port;
        transition select(hdr.udp.dst_port) {
            ROCE_V2_PORT: parse_bth;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.l4_src_port = hdr.tcp.src_port;
        meta.l4_dst_port = hdr.tcp.dst_port;
        transition accept;
    }

    state parse_bth {
        packet.extract(hdr.bth);
        meta.is_roce = 1;
        transition accept;
    }
}

control LeafVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control LeafIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) acl_counter;
    counter(NUM_PORTS, CounterType.packets_and_bytes) ingress_port_counter;
    meter(NUM_PORTS, MeterType.bytes) cpu_meter;
    bit<2> cpu_color;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action send_to_cpu(bit<7> reason) {
        standard_metadata.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = standard_metadata.ingress_port;
        hdr.packet_in.reason = reason;
    }

    action set_priority(prio_t priority) {
        meta.priority = priority;
        standard_metadata.priority = priority;
    }

    action l2_forward(port_t port) {
        standard_metadata.egress_spec = port;
    }

    action l3_forward(mac_t src_mac, mac_t dst_mac, port_t port) {
        hdr.ethernet.src = src_mac;
        hdr.ethernet.dst = dst_mac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table l2_table {
        key = {
            hdr.ethernet.dst : exact;
            hdr.vlan.vid     : exact @name("vlan_id");
        }
        actions = { l2_forward; drop; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    table ecmp_table {
        key = {
            hdr.ipv4.dst      : lpm;
            hdr.ipv4.src      : selector;
            hdr.ipv4.protocol : selector;
            meta.l4_src_port  : selector;
            meta.l4_dst_port  : selector;
        }
        actions = { l3_forward; drop; }
        implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w16);
        default_action = drop();
        size = 1024;
    }

    table priority_table {
        key = {
            meta.is_roce   : exact;
            meta.is_cnp    : exact;
            hdr.ipv4.dscp  : ternary;
        }
        actions = { set_priority; NoAction; }
        const entries = {
            (1, 1, _)            : set_priority(7);   // CNPs jump every queue
            (1, 0, _)            : set_priority(3);   // lossless RoCE class
            (0, 0, 46 &&& 0x3f)  : set_priority(5);
        }
        default_action = set_priority(0);
    }

    table acl {
        key = {
            standard_metadata.ingress_port : ternary;
            hdr.ethernet.ether_type        : ternary;
            hdr.ipv4.src                   : ternary;
            hdr.ipv4.dst                   : ternary;
            hdr.ipv4.protocol              : ternary;
            meta.l4_dst_port               : range;
        }
        actions = { send_to_cpu; drop; NoAction; }
        const default_action = NoAction();
        counters = acl_counter;
        size = 256;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        if (hdr.pfc.isValid()) {
            // Pause frames are consumed by the MAC, never forwarded.
            drop();
            exit;
        }
        ingress_port_counter.count((bit<32>)standard_metadata.ingress_port);
        if (hdr.bth.isValid() && hdr.bth.opcode == BTH_OPCODE_CNP) {
            meta.is_cnp = 1;
        }

        if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ttl <= 1) {
                send_to_cpu(1);
            } else {
                ecmp_table.apply();
            }
            priority_table.apply();
        } else {
            l2_table.apply();
        }

        switch (acl.apply().action_run) {
            send_to_cpu: {
                cpu_meter.execute_meter<bit<2>>((bit<32>)standard_metadata.ingress_port, cpu_color);
                if (cpu_color == V1MODEL_METER_COLOR_RED) {
                    drop();
                }
            }
            default: { }
        }
    }
}

control LeafEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    register<bit<32>>(NUM_PORTS * NUM_PRIORITIES) max_qdepth;
    register<bit<48>>(NUM_PORTS) last_pause_ts;
    counter(NUM_PORTS, CounterType.packets) ce_marked;

    action set_ecn_profile(bit<19> kmin, bit<19> kmax, bit<8> drop_chance) {
        meta.kmin = kmin;
        meta.kmax = kmax;
        meta.drop_chance = drop_chance;
    }

    table ecn_profile {
        key = {
            standard_metadata.egress_port : exact;
            meta.priority                 : exact;
        }
        actions = { set_ecn_profile; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action request_pause(bit<19> xoff) {
        meta.pause_port = standard_metadata.ingress_port;
        meta.pause_priority = meta.priority;
        clone_preserving_field_list(CloneType.E2E, PFC_SESSION, 1);
    }

    table pfc_threshold {
        key = {
            standard_metadata.egress_port : exact;
            meta.priority                 : exact;
        }
        actions = { request_pause; NoAction; }
        default_action = NoAction();
    }

    action build_pause(mac_t src_mac) {
        hdr.ethernet.setValid();
        hdr.ethernet.dst = 0x0180c2000001;
        hdr.ethernet.src = src_mac;
        hdr.ethernet.ether_type = ETHERTYPE_MACCTRL;
        hdr.pfc.setValid();
        hdr.pfc.opcode = PFC_OPCODE;
        hdr.pfc.reserved = 0;
        hdr.pfc.class_enable = (bit<8>)1 << meta.pause_priority;
        hdr.vlan.setInvalid();
        hdr.ipv4.setInvalid();
        hdr.udp.setInvalid();
        hdr.tcp.setInvalid();
        hdr.bth.setInvalid();
        truncate(64);
    }

    table pause_source {
        key = { standard_metadata.egress_port : exact; }
        actions = { build_pause; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (standard_metadata.instance_type == INSTANCE_I2E || standard_metadata.instance_type == 2) {
            pause_source.apply();
            exit;
        }

        meta.qdepth_index = (bit<32>)standard_metadata.egress_port * NUM_PRIORITIES
                            + (bit<32>)meta.priority;
        bit<32> seen_max;
        max_qdepth.read(seen_max, meta.qdepth_index);
        if ((bit<32>)standard_metadata.enq_qdepth > seen_max) {
            max_qdepth.write(meta.qdepth_index, (bit<32>)standard_metadata.enq_qdepth);
        }

        if (hdr.ipv4.isValid() && hdr.ipv4.ecn != 0) {
            if (ecn_profile.apply().hit) {
                if (standard_metadata.enq_qdepth >= meta.kmax) {
                    meta.mark_ce = 1;
                } else if (standard_metadata.enq_qdepth > meta.kmin) {
                    random<bit<8>>(meta.random_value, 0, 255);
                    // Between Kmin and Kmax, mark with the profile's probability.
                    meta.mark_ce = (meta.random_value < meta.drop_chance) ? 1w1 : 1w0;
                }
                if (meta.mark_ce == 1) {
                    hdr.ipv4.ecn = 3;
                    ce_marked.count((bit<32>)standard_metadata.egress_port);
                }
            }
        }

        if (meta.is_roce == 1) {
            pfc_threshold.apply();
        }

        bit<48> now = standard_metadata.egress_global_timestamp;
        last_pause_ts.write((bit<32>)standard_metadata.egress_port, now);

        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
        } else {
            hdr.packet_in.setInvalid();
        }
    }
}

control LeafComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control LeafDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.pfc);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
        packet.emit(hdr.bth);
    }
}

V1Switch(LeafParser(), LeafVerifyChecksum(), LeafIngress(), LeafEgress(),
         LeafComputeChecksum(), LeafDeparser()) main;
