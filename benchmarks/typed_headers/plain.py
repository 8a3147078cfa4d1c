"""The RoCEv2 header path of fabric.p4 as the executor's generated Python
does it (header objects with class-level defaults, struct unpack/pack, the
RFC 1071 checksum through ``int.from_bytes``): parse Ethernet/IPv4/UDP/BTH
into fresh header objects (six more left invalid), verify the IPv4
checksum, decrement the TTL, recompute the checksum, deparse. The twin of
``typed.pyx``; :mod:`benchmarks.typed_headers.run` times both."""

from struct import Struct
_u_eth = Struct('>6sQ').unpack_from
_p_eth = Struct('>6sQ').pack
_u_ip = Struct('>BBHHHBBHII').unpack_from
_p_ip = Struct('>BBHHHBBHII').pack
_p_ip9 = Struct('>BBHHHBBII').pack
_u_udp = Struct('>HHHH').unpack_from
_p_udp = Struct('>HHHH').pack
_u_bth = Struct('>BBHII').unpack_from
_p_bth = Struct('>BBHII').pack

class Eth:
    _v = False; dst_addr = 0; src_addr = 0; ether_type = 0
class Ip:
    _v = False; version = 0; ihl = 0; dscp = 0; ecn = 0; total_len = 0; identification = 0; flags = 0
    frag_offset = 0; ttl = 0; protocol = 0; hdr_checksum = 0; src_addr = 0; dst_addr = 0
class Udp:
    _v = False; src_port = 0; dst_port = 0; length = 0; checksum = 0
class Bth:
    _v = False; opcode = 0; solicited = 0; mig_req = 0; pad_count = 0; tver = 0; pkey = 0; fecn = 0; becn = 0
    resv6 = 0; dest_qp = 0; ack_req = 0; resv7 = 0; psn = 0
class Other:
    _v = False
class Hdrs:
    __slots__ = ('a','b','c','d','e','f','ethernet','ipv4','udp','bth')

def csum16(data):
    n = int.from_bytes(data, "big")
    if len(data) & 1: n <<= 8
    total = n % 0xFFFF
    if not total and n: total = 0xFFFF
    return (~total) & 0xFFFF

def process(data):
    H = Hdrs()
    H.a = Other(); H.b = Other(); H.c = Other(); H.d = Other(); H.e = Other(); H.f = Other()
    H.ethernet = h = Eth()
    g0, g1 = _u_eth(data, 0)
    h.dst_addr = int.from_bytes(g0, 'big'); h.src_addr = g1 >> 16; h.ether_type = g1 & 65535; h._v = True
    H.ipv4 = h = Ip()
    g0, g1, g2, g3, g4, g5, g6, g7, g8, g9 = _u_ip(data, 14)
    h.version = g0 >> 4; h.ihl = g0 & 15; h.dscp = g1 >> 2; h.ecn = g1 & 3; h.total_len = g2; h.identification = g3
    h.flags = g4 >> 13; h.frag_offset = g4 & 8191; h.ttl = g5; h.protocol = g6; h.hdr_checksum = g7; h.src_addr = g8; h.dst_addr = g9; h._v = True
    H.udp = h = Udp()
    g0, g1, g2, g3 = _u_udp(data, 34)
    h.src_port = g0; h.dst_port = g1; h.length = g2; h.checksum = g3; h._v = True
    H.bth = h = Bth()
    g0, g1, g2, g3, g4 = _u_bth(data, 42)
    h.opcode = g0; h.solicited = g1 >> 7; h.mig_req = (g1 >> 6) & 1; h.pad_count = (g1 >> 4) & 3; h.tver = g1 & 15; h.pkey = g2
    h.fecn = g3 >> 31; h.becn = (g3 >> 30) & 1; h.resv6 = (g3 >> 24) & 63; h.dest_qp = g3 & 16777215
    h.ack_req = g4 >> 31; h.resv7 = (g4 >> 24) & 127; h.psn = g4 & 16777215; h._v = True
    payload = data[54:]
    i = H.ipv4
    err = int(bool(i._v and i.ihl == 5) and (csum16(_p_ip9((i.version << 4) | i.ihl, (i.dscp << 2) | i.ecn, i.total_len, i.identification, (i.flags << 13) | i.frag_offset, i.ttl, i.protocol, i.src_addr, i.dst_addr)) & 65535) != i.hdr_checksum)
    i.ttl -= 1
    i.hdr_checksum = csum16(_p_ip9((i.version << 4) | i.ihl, (i.dscp << 2) | i.ecn, i.total_len, i.identification, (i.flags << 13) | i.frag_offset, i.ttl, i.protocol, i.src_addr, i.dst_addr)) & 65535
    out = []
    # The deparser tests every header's validity, as the generated one does:
    # packet_out/packet_in before Ethernet, pfc/pfc_pad/vlan/arp after it.
    for x in (H.a, H.b):
        if x._v: out.append(b'')
    e = H.ethernet
    e._v and out.append(_p_eth(e.dst_addr.to_bytes(6, 'big'), (e.src_addr << 16) | e.ether_type))
    for x in (H.c, H.d, H.e, H.f):
        if x._v: out.append(b'')
    i._v and out.append(_p_ip((i.version << 4) | i.ihl, (i.dscp << 2) | i.ecn, i.total_len, i.identification, (i.flags << 13) | i.frag_offset, i.ttl, i.protocol, i.hdr_checksum, i.src_addr, i.dst_addr))
    u = H.udp
    u._v and out.append(_p_udp(u.src_port, u.dst_port, u.length, u.checksum))
    b = H.bth
    b._v and out.append(_p_bth(b.opcode, (b.solicited << 7) | (b.mig_req << 6) | (b.pad_count << 4) | b.tver, b.pkey, (b.fecn << 31) | (b.becn << 30) | (b.resv6 << 24) | b.dest_qp, (b.ack_req << 31) | (b.resv7 << 24) | b.psn))
    out.append(payload)
    return b"".join(out), err
