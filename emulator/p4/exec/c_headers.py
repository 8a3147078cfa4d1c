"""C code of the compiled executor (:mod:`.compiled`) for headers whose
fields are all C integers (:func:`.layout.c_fixed`): ``_x_<class>`` extracts
one from the parser's cursor and ``_e_<class>`` emits its bytes, both through
C pointers; and the module prelude they and the checksum twin need.

Each field is read or written from the bytes it spans: up to eight as one
big-endian load or store, a 64-bit field that starts inside a byte (nine
bytes) as the first eight and the top bits of the ninth.
"""

from __future__ import annotations


def c_extract_fn(name: str, nbytes: int, spans: list[tuple[str, int, int, int, int]]) -> str:
    """``_x_<name>(h, cur)``: what the inline extract of header class
    ``name`` (``nbytes`` long, fields as :func:`.layout.c_spans` gives them)
    does, reading the bytes through a C pointer (a cursor over anything but
    ``bytes``: the header's ``_ext``)."""
    lines = [f"cdef int _x_{name}({name} h, Cursor cur) except -1:",
             "    cdef Py_ssize_t o = cur.off",
             f"    cdef Py_ssize_t e = o + {nbytes}",
             "    cdef const unsigned char* p",
             "    if e > cur.end:",
             "        raise ParserError(ERR_PACKET_TOO_SHORT)",
             "    buf = cur.buf",
             "    if type(buf) is not bytes or e > PyBytes_GET_SIZE(buf):",
             "        h._ext(cur)",
             "        return 0",
             "    p = <const unsigned char*>PyBytes_AS_STRING(buf) + o"]
    for slot, first, span, r, w in spans:
        mask = (1 << w) - 1
        if span <= 8:
            code = f"_ld(p + {first}, {span})"
            shift = span * 8 - r - w
            code = f"({code} >> {shift})" if shift else code
        else:  # 9 bytes: the first 8 shifted up, then the last byte's top bits
            code = (f"(((_ld(p + {first}, 8) << {r}) | (p[{first + 8}] >> {8 - r})) "
                    f">> {64 - w})")
        lines.append(f"    h.{slot} = {code} & {mask}ULL" if w < 64 else f"    h.{slot} = {code}")
    lines += ["    h._v = True", "    cur.off = e", "    return 0"]
    return "\n".join(lines)


def c_emit_fn(name: str, nbytes: int, spans: list[tuple[str, int, int, int, int]]) -> str:
    """``_w_<name>(h, q)``: the header's bytes written at ``q`` (``nbytes``
    of them), and ``_e_<name>(h)``: those bytes as a new bytes object."""
    lines = [f"cdef inline void _w_{name}({name} h, unsigned char* q) noexcept:",
             f"    memset(q, 0, {nbytes})"]
    for slot, first, span, r, w in spans:
        v = f"(h.{slot} & {(1 << w) - 1}ULL)" if w < 64 else f"h.{slot}"
        if span <= 8:
            shift = span * 8 - r - w
            lines.append(f"    _st(q + {first}, {span}, {v} << {shift})" if shift
                         else f"    _st(q + {first}, {span}, {v})")
        else:
            low = r + w - 64  # the field's bits in the last byte
            lines.append(f"    _st(q + {first}, 8, {v} >> {low})")
            lines.append(f"    q[{first + 8}] |= <unsigned char>(({v} & {(1 << low) - 1}ULL) << {8 - low})")
    lines += [f"cdef bytes _e_{name}({name} h):",
              f"    cdef bytes out = PyBytes_FromStringAndSize(NULL, {nbytes})",
              f"    _w_{name}(h, <unsigned char*>PyBytes_AS_STRING(out))",
              "    return out"]
    return "\n".join(lines)


# The C helpers the functions above use (in the module's prelude).
C_PRELUDE = """from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.string cimport memcpy, memset

cdef inline unsigned long long _ld(const unsigned char* p, int n) noexcept nogil:
    cdef unsigned long long v = 0
    cdef int i
    for i in range(n):
        v = (v << 8) | p[i]
    return v

cdef inline void _st(unsigned char* p, int n, unsigned long long v) noexcept nogil:
    cdef int i
    for i in range(n - 1, -1, -1):
        p[i] |= <unsigned char>(v & 0xFF)
        v >>= 8

cdef inline unsigned long long _csum16_at(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    # externs.csum16 in C: the folded one's-complement sum of the 16-bit
    # words (a non-zero sum never folds to 0), complemented.
    cdef Py_ssize_t i
    cdef unsigned long long s = 0
    for i in range(0, n - 1, 2):
        s += (p[i] << 8) | p[i + 1]
    if n & 1:
        s += p[n - 1] << 8
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF

cpdef object _c_csum16(bytes data):
    return _csum16_at(<const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
"""
# Python functions the compiled module has a C twin of (by qualified name):
# the twin and its parameters (see .cython_module.c_twin_wrapper).
C_TWINS = {"emulator.p4.exec.externs.csum16": ("_c_csum16", "bytes data")}
