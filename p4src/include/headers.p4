/*
 * fabric.p4 headers and metadata.
 *
 * Ethernet, optional 802.1Q, ARP, IPv4, UDP, the RoCEv2 base transport
 * header (UDP 4791), IEEE 802.1Qbb priority flow control frames, and the
 * controller's packet_in/packet_out headers.
 */
#ifndef FABRIC_HEADERS_P4
#define FABRIC_HEADERS_P4

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP = 0x0806;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;
const bit<16> MAC_CONTROL_PFC = 0x0101;       /* 802.1Qbb class-based pause */
const bit<48> PFC_DST_MAC = 0x0180c2000001;
const bit<8> IP_PROTO_UDP = 17;
const bit<16> UDP_PORT_ROCEV2 = 4791;
const bit<8> BTH_OPCODE_CNP = 0x81;
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_CE = 3;
const bit<32> INSTANCE_TYPE_NORMAL = 0;   /* standard_metadata.instance_type */

#ifndef CPU_PORT
#define CPU_PORT 255
#endif

/* Clone sessions PFC_SESSION_BASE + port send a generated pause frame out
 * of that port; the controller creates one per port. */
#define PFC_SESSION_BASE 1000
/* Registers and counters indexed by port * 8 + priority. */
#define PORT_PRIO_SLOTS 4096

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header vlan_t {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> ether_type;
}

header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8> hlen;
    bit<8> plen;
    bit<16> oper;
    bit<48> sha;
    bit<32> spa;
    bit<48> tha;
    bit<32> tpa;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* InfiniBand base transport header (RoCEv2 Annex A17). */
header bth_t {
    bit<8> opcode;
    bit<1> solicited;
    bit<1> mig_req;
    bit<2> pad_count;
    bit<4> tver;
    bit<16> pkey;
    bit<1> fecn;
    bit<1> becn;
    bit<6> resv6;
    bit<24> dest_qp;
    bit<1> ack_req;
    bit<7> resv7;
    bit<24> psn;
}

/* MAC control frame with the 802.1Qbb class-based flow control payload:
 * class-enable vector, then one pause time per priority in quanta of 512
 * bit times. */
header pfc_t {
    bit<16> opcode;
    bit<8> reserved;
    bit<8> class_enable;
    bit<16> time0;
    bit<16> time1;
    bit<16> time2;
    bit<16> time3;
    bit<16> time4;
    bit<16> time5;
    bit<16> time6;
    bit<16> time7;
}

/* Zero bytes that pad a generated pause frame to the 60-byte minimum. */
header pfc_pad_t {
    bit<208> zeros;
}

/* A received PFC frame as FabricIngress reports it to the controller
 * (digest<pfc_pause_t>): only targets without PFC in the MAC (BMv2) hand
 * these frames to P4; the controller then slows the paused queues
 * (emulator/control/bmv2_pfc.py). */
struct pfc_pause_t {
    bit<9> ingress_port;
    bit<8> class_enable;
    bit<16> time0;
    bit<16> time1;
    bit<16> time2;
    bit<16> time3;
    bit<16> time4;
    bit<16> time5;
    bit<16> time6;
    bit<16> time7;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t ethernet;
    pfc_t pfc;
    pfc_pad_t pfc_pad;
    vlan_t vlan;
    arp_t arp;
    ipv4_t ipv4;
    udp_t udp;
    bth_t bth;
}

struct metadata_t {
    bit<16> l4_src_port;
    bit<16> l4_dst_port;
    bit<32> flow_hash;          /* CRC-32 of the 5-tuple */
    bit<8> hash_offset;         /* this switch's ECMP hash offset, in bits */
    bit<16> ecmp_key;           /* the 16 bits of flow_hash ECMP selects on */
    bit<32> port_prio;          /* ingress_port * 8 + priority */
    bit<1> lossless;            /* PFC accounting applies to this packet */
    bit<1> pause_sent;
    /* Carried to the clone that becomes a pause frame. */
    @field_list(1)
    bit<1> pfc_frame;
    @field_list(1)
    bit<3> pfc_priority;
    @field_list(1)
    bit<16> pfc_quanta;
}

#endif
