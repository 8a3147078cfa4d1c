# cython: language_level=3, boundscheck=False, wraparound=False
"""``plain.py``'s header path with typed extension classes (``cdef class``,
C integer fields) and the bytes read and written through a C pointer: what
generated Cython for a program's headers and blocks would run. Same
outputs as ``plain.py`` (``run.py`` checks)."""

from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.string cimport memcpy

cdef class Eth:
    cdef public bint _v
    cdef public unsigned long long dst_addr, src_addr
    cdef public unsigned int ether_type
cdef class Ip:
    cdef public bint _v
    cdef public unsigned int version, ihl, dscp, ecn, total_len, identification, flags, frag_offset, ttl, protocol, hdr_checksum, src_addr, dst_addr
cdef class Udp:
    cdef public bint _v
    cdef public unsigned int src_port, dst_port, length, checksum
cdef class Bth:
    cdef public bint _v
    cdef public unsigned int opcode, solicited, mig_req, pad_count, tver, pkey, fecn, becn, resv6, dest_qp, ack_req, resv7, psn
cdef class Other:
    cdef public bint _v
cdef class Hdrs:
    cdef public Other a, b, c, d, e, f
    cdef public Eth ethernet
    cdef public Ip ipv4
    cdef public Udp udp
    cdef public Bth bth

cdef inline unsigned int be16(const unsigned char* p): return (p[0] << 8) | p[1]
cdef inline unsigned int be32(const unsigned char* p): return (p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]
cdef inline unsigned long long be48(const unsigned char* p): return (<unsigned long long>be16(p) << 32) | be32(p + 2)

cdef unsigned int ip_csum(Ip i):
    cdef unsigned long s = 0
    s += ((i.version << 4 | i.ihl) << 8) | (i.dscp << 2 | i.ecn)
    s += i.total_len + i.identification + ((i.flags << 13) | i.frag_offset)
    s += (i.ttl << 8) | i.protocol
    s += (i.src_addr >> 16) + (i.src_addr & 0xFFFF) + (i.dst_addr >> 16) + (i.dst_addr & 0xFFFF)
    while s >> 16: s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF

def process(bytes data):
    cdef const unsigned char* p = data
    cdef unsigned int g3, g4
    cdef unsigned char* q
    cdef Py_ssize_t o = 0
    cdef Py_ssize_t n = len(data)
    cdef Eth e
    cdef Ip i
    cdef Udp u
    cdef Bth b
    cdef Hdrs H = Hdrs.__new__(Hdrs)
    H.a = Other.__new__(Other); H.b = Other.__new__(Other); H.c = Other.__new__(Other)
    H.d = Other.__new__(Other); H.e = Other.__new__(Other); H.f = Other.__new__(Other)
    e = Eth.__new__(Eth)
    H.ethernet = e
    e.dst_addr = be48(p); e.src_addr = be48(p + 6); e.ether_type = be16(p + 12); e._v = True
    i = Ip.__new__(Ip)
    H.ipv4 = i
    i.version = p[14] >> 4; i.ihl = p[14] & 15; i.dscp = p[15] >> 2; i.ecn = p[15] & 3; i.total_len = be16(p + 16)
    i.identification = be16(p + 18); i.flags = be16(p + 20) >> 13; i.frag_offset = be16(p + 20) & 8191
    i.ttl = p[22]; i.protocol = p[23]; i.hdr_checksum = be16(p + 24); i.src_addr = be32(p + 26); i.dst_addr = be32(p + 30); i._v = True
    u = Udp.__new__(Udp)
    H.udp = u
    u.src_port = be16(p + 34); u.dst_port = be16(p + 36); u.length = be16(p + 38); u.checksum = be16(p + 40); u._v = True
    b = Bth.__new__(Bth)
    H.bth = b
    b.opcode = p[42]; b.solicited = p[43] >> 7; b.mig_req = (p[43] >> 6) & 1; b.pad_count = (p[43] >> 4) & 3; b.tver = p[43] & 15
    b.pkey = be16(p + 44)
    g3 = be32(p + 46); g4 = be32(p + 50)
    b.fecn = g3 >> 31; b.becn = (g3 >> 30) & 1; b.resv6 = (g3 >> 24) & 63; b.dest_qp = g3 & 16777215
    b.ack_req = g4 >> 31; b.resv7 = (g4 >> 24) & 127; b.psn = g4 & 16777215; b._v = True
    payload = data[54:]
    err = int(i._v and i.ihl == 5 and ip_csum(i) != i.hdr_checksum)
    i.ttl -= 1
    i.hdr_checksum = ip_csum(i)
    out = PyBytes_FromStringAndSize(NULL, n)
    q = <unsigned char*>PyBytes_AS_STRING(out)
    if H.a._v or H.b._v or H.c._v or H.d._v or H.e._v or H.f._v:  # as plain.py: tested, never valid
        raise ValueError("an invalid header became valid")
    if e._v:
        q[0] = (e.dst_addr >> 40) & 255; q[1] = (e.dst_addr >> 32) & 255; q[2] = (e.dst_addr >> 24) & 255; q[3] = (e.dst_addr >> 16) & 255; q[4] = (e.dst_addr >> 8) & 255; q[5] = e.dst_addr & 255
        q[6] = (e.src_addr >> 40) & 255; q[7] = (e.src_addr >> 32) & 255; q[8] = (e.src_addr >> 24) & 255; q[9] = (e.src_addr >> 16) & 255; q[10] = (e.src_addr >> 8) & 255; q[11] = e.src_addr & 255
        q[12] = e.ether_type >> 8; q[13] = e.ether_type & 255; o = 14
    if i._v:
        q[o] = (i.version << 4) | i.ihl; q[o+1] = (i.dscp << 2) | i.ecn; q[o+2] = i.total_len >> 8; q[o+3] = i.total_len & 255
        q[o+4] = i.identification >> 8; q[o+5] = i.identification & 255; q[o+6] = ((i.flags << 13) | i.frag_offset) >> 8; q[o+7] = i.frag_offset & 255
        q[o+8] = i.ttl; q[o+9] = i.protocol; q[o+10] = i.hdr_checksum >> 8; q[o+11] = i.hdr_checksum & 255
        q[o+12] = i.src_addr >> 24; q[o+13] = (i.src_addr >> 16) & 255; q[o+14] = (i.src_addr >> 8) & 255; q[o+15] = i.src_addr & 255
        q[o+16] = i.dst_addr >> 24; q[o+17] = (i.dst_addr >> 16) & 255; q[o+18] = (i.dst_addr >> 8) & 255; q[o+19] = i.dst_addr & 255; o += 20
    if u._v:
        q[o] = u.src_port >> 8; q[o+1] = u.src_port & 255; q[o+2] = u.dst_port >> 8; q[o+3] = u.dst_port & 255
        q[o+4] = u.length >> 8; q[o+5] = u.length & 255; q[o+6] = u.checksum >> 8; q[o+7] = u.checksum & 255; o += 8
    if b._v:
        q[o] = b.opcode; q[o+1] = (b.solicited << 7) | (b.mig_req << 6) | (b.pad_count << 4) | b.tver; q[o+2] = b.pkey >> 8; q[o+3] = b.pkey & 255
        g3 = (b.fecn << 31) | (b.becn << 30) | (b.resv6 << 24) | b.dest_qp; g4 = (b.ack_req << 31) | (b.resv7 << 24) | b.psn
        q[o+4] = g3 >> 24; q[o+5] = (g3 >> 16) & 255; q[o+6] = (g3 >> 8) & 255; q[o+7] = g3 & 255
        q[o+8] = g4 >> 24; q[o+9] = (g4 >> 16) & 255; q[o+10] = (g4 >> 8) & 255; q[o+11] = g4 & 255; o += 12
    memcpy(q + o, p + 54, n - 54)
    return out, err
