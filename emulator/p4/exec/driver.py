"""The v1model packet flow around a program's blocks, written into its
generated module: ``ingress(port, data, instance_type, preserved)`` and
``egress(item, queue)``, which :class:`.pipeline.V1ModelPipeline` exposes as
its methods of those names (see their docstrings there).

It is generated code because it is per-packet code: in the module it calls
the program's blocks and makes its frames directly, and compiled (the Cython
executor, :mod:`.compiled`) it reads and writes the frame's standard
metadata as C fields. The text is the same for both executors; lines
``#cy: ...`` are comments to Python and declarations to Cython. The
pipeline object is ``PIPE``; the rare paths (clones, multicast, resubmit,
recirculate) are its methods.
"""

from __future__ import annotations

import re

# Names the text uses besides the module's own (bound by ``bind``, but for
# the compiled twins below, which are the module's):
# PIPE, the blocks' functions (__PARSER__ ... __DEPARSER__, replaced by
# :func:`driver_source`), the standard metadata's class (__SM__).
DRIVER = '''
def ingress(port, data, instance_type=0, preserved=None):
    #cy: cdef PacketFrame f
    #cy: cdef __SM__ sm
    #cy: cdef PacketContext ctx
    #cy: cdef Cursor cur
    #cy: cdef ProcessResult result
    result = ProcessResult.__new__(ProcessResult)
    result.outputs = result.digests = result.logs = result.recirculate = _NOTHING
    result.queued = queued = []
    result.dropped = 0
    passes = 0
    while True:
        passes += 1
        if passes > MAX_PASSES:
            result.dropped += 1
            return result
        now = PIPE._clock_us()
        ctx = PacketContext(len(data), now, PIPE.rng)
        f = mk_packet(ctx)
        meta = f.meta
        sm = f.sm
        ctx.sm = sm
        if preserved:
            for name, value in preserved.items():
                setattr(meta, name, value)
        sm.packet_length = ctx.length
        if instance_type == NORMAL:  # (the metadata's default instance type)
            # Only a packet received from a port gets these (SimpleSwitch::
            # receive_); a resubmitted or recirculated one has its metadata
            # reset (but for the field list), so they read 0.
            sm.ingress_port = port
            sm.ingress_global_timestamp = int(now) & 0xFFFFFFFFFFFF
        else:
            sm.instance_type = instance_type
        cur = Cursor(data)
        f.pkt_in = cur
        try:
            __PARSER__(f)
        except ParserError as exc:
            if exc.args and exc.args[0] is not None:
                f.sm.parser_error = exc.args[0]
        # A view, not a copy: the deparser's join copies the payload once,
        # and a queued packet holds its frame's bytes once (compiled: the
        # frame and the offset, no view).
        ctx.payload = memoryview(data)[cur.off:] if cur.off else data
        try:
            __VERIFY__(f)
        except ExitBlock:
            pass
        if ctx.checksum_error:
            f.sm.checksum_error = ctx.checksum_error
        decisions = PIPE.decisions
        if decisions is None or instance_type != NORMAL or preserved:
            try:
                __INGRESS__(f)
            except ExitBlock:
                pass
        else:
            key = decisions.read_key(f)
            cached = decisions.entries.get(key)
            if cached is not None:
                # The same fields in, the same tables: the same decisions.
                decisions.hits += 1
                write, values, bumps, length_delta = cached
                write(f, values)
                if bumps:
                    replay_bumps(bumps, ctx.length)
                ctx.length_reg += length_delta
            else:
                decisions.misses += 1
                ctx.nocache = False  # (the parser's and verify's marks don't count)
                ctx.bumps = []
                length_reg = ctx.length_reg
                read = decisions.read
                before = key if read is decisions.read_key else read(f)
                try:
                    __INGRESS__(f)
                except ExitBlock:
                    pass
                if not ctx.nocache and ctx.clone is None and ctx.resubmit is None \\
                        and ctx.recirculate is None and ctx.truncate is None \\
                        and not ctx.digests and not ctx.logs and ctx.meter_color is None:
                    decisions.store(key, before, read(f), tuple(ctx.bumps),
                                    ctx.length_reg - length_reg)
        sm = f.sm
        if ctx.digests:
            result.digests = [*result.digests, *ctx.digests]
        if ctx.logs:
            result.logs = [*result.logs, *ctx.logs]
        if ctx.clone is not None and ctx.clone[0] == CLONE_I2E:
            PIPE._clone_i2e(port, data, f, queued)
        if ctx.resubmit is not None:
            preserved = PIPE._keep(f.meta, ctx.resubmit)
            instance_type = RESUBMIT
            continue
        mgid = sm.mcast_grp
        if mgid:
            sm.instance_type = REPLICATION
            PIPE._replicate(mgid, f, queued, result)
            return result
        egress_spec = sm.egress_spec
        if egress_spec == DROP_PORT:
            result.dropped += 1
            return result
        sm.instance_type = NORMAL
        ctx.owner = f  # no other frame shares this context: egress may reuse it
        queued.append(EgressItem(egress_spec, sm.priority, ctx.length, f))
        return result


def egress(item, queue=None):
    #cy: cdef PacketFrame f
    #cy: cdef __SM__ sm
    #cy: cdef PacketContext ctx
    #cy: cdef ProcessResult result
    result = ProcessResult.__new__(ProcessResult)  # (as in ingress)
    result.outputs = result.digests = result.logs = result.recirculate = result.queued = _NOTHING
    result.dropped = 0
    #cy: cdef bint owned = False
    if queue is None:
        queue = PIPE._no_queue
    port = item.port
    f = item.pkt
    sm = f.sm
    priority = sm.priority
    if priority >= PIPE.priority_queues:
        result.dropped += 1
        return result
    now = PIPE._clock_us()
    ctx = f._ctx
    if ctx.owner is f:
        # The packet's own context from ingress (a unicast packet): what
        # egress starts from (length register, payload, truncation) is in
        # it already; what ingress asked for was acted on.
        ctx.owner = None
        #cy: owned = True
        ctx.now_us = now
        ctx.clone = ctx.resubmit = ctx.recirculate = ctx.meter_color = None
        ctx.digests = ctx.logs = _NOTHING
        ctx.checksum_error = 0
    else:  # shared with other copies (multicast, clones): one of its own
        ictx = f._ctx
        ctx = PacketContext(ictx.length, now, PIPE.rng)
        ctx.length_reg = ictx.length_reg
        ctx.payload = ictx.payload
        ctx.sm = sm
        if ictx.truncate is not None:
            ctx.truncate = ictx.truncate
        f._ctx = ctx
    enq_us = queue.enq_timestamp_us
    if enq_us is None:
        enq_us = now
    sm.enq_timestamp = int(enq_us) & 0xFFFFFFFF
    sm.enq_qdepth = queue.enq_qdepth & 0x7FFFF
    sm.deq_timedelta = int(now - enq_us) & 0xFFFFFFFF
    sm.deq_qdepth = queue.deq_qdepth & 0x7FFFF
    sm.egress_global_timestamp = int(now) & 0xFFFFFFFFFFFF
    sm.egress_port = port
    sm.egress_spec = EGRESS_SPEC_AT_EGRESS
    sm.packet_length = ctx.length_reg & 0xFFFFFFFF
    try:
        __EGRESS__(f)
    except ExitBlock:
        pass
    sm = f.sm
    if ctx.digests:
        result.digests = list(ctx.digests)
    if ctx.logs:
        result.logs = list(ctx.logs)
    if ctx.clone is not None and ctx.clone[0] == CLONE_E2E:
        clones = []
        PIPE._clone_e2e(f, ctx, clones)
        result.queued = clones
    if sm.egress_spec == DROP_PORT:
        result.dropped += 1
        return result
    try:
        __COMPUTE__(f)
    except ExitBlock:
        pass
    out = []
    f.pkt_out = out
    try:
        __DEPARSER__(f)
    except ExitBlock:
        pass
    out.append(ctx.payload)
    data = b"".join(out)
    if ctx.truncate is not None:
        data = data[:ctx.truncate]
    if ctx.recirculate is not None:
        preserved = PIPE._keep(f.meta, ctx.recirculate)
        result.recirculate = [(sm.ingress_port, data, RECIRC, preserved)]
        return result
    result.outputs = [Output(port, data, sm.instance_type, priority)]
    #cy: if owned and ctx.clone is None:
    #cy:     _release(f, item, ctx)  # the frame, where nothing else holds it, made anew
    return result
'''

# The compiled driver's own classes for the per-packet objects, as extension
# types: the same attributes, methods and defaults as the Python classes
# they stand for (.externs.PacketContext and Cursor, .pipeline.ProcessResult,
# EgressItem and Output), which the pipeline uses in their place (its namespace).
CYTHON_TWINS = """
from cpython.ref cimport PyObject
from emulator.p4.exec.externs import COLOR_GREEN

@cython.freelist(32)
cdef class PacketContext:
    cdef public object length, length_reg, now_us, rng, clone, resubmit, recirculate
    cdef public object truncate, digests, checksum_error, logs, meter_color, sm
    cdef public object owner, bumps
    cdef public bint nocache
    # The payload is the frame's bytes from an offset on (``payload``: a
    # view of them, made only where asked for; the driver's deparser copies
    # them straight into the frame it builds, see _join_out).
    cdef public object _pdata
    cdef public Py_ssize_t _poff

    def __init__(self, length, now_us, rng):
        self.length = length
        self.length_reg = length
        self.now_us = now_us
        self.rng = rng
        self.clone = self.resubmit = self.recirculate = self.truncate = None
        self.digests = ()
        self.checksum_error = 0
        self.logs = ()
        self.meter_color = None
        self._pdata = b""
        self.sm = self.owner = None
        self.nocache = False
        self.bumps = []

    @property
    def payload(self):
        return memoryview(self._pdata)[self._poff:] if self._poff else self._pdata

    @payload.setter
    def payload(self, value):
        self._pdata = value
        self._poff = 0

    def digest(self, name, value):
        if not self.digests:
            self.digests = []
        self.digests.append((name, value))

    def log(self, line):
        if not self.logs:
            self.logs = []
        self.logs.append(line)

    def set_color(self, meter_key, color):
        if self.meter_color is None:
            self.meter_color = {}
        self.meter_color[meter_key] = color

    def color(self, meter_key):
        colors = self.meter_color
        return colors.get(meter_key, COLOR_GREEN) if colors is not None else COLOR_GREEN


@cython.freelist(32)
cdef class Cursor:
    cdef public object buf
    cdef public Py_ssize_t off, end

    def __init__(self, buf):
        self.buf = buf
        self.off = 0
        self.end = len(buf)


#results:
@cython.freelist(32)
cdef class ProcessResult:
    cdef public object outputs, dropped, digests, logs, queued, recirculate

    def __init__(self, outputs=None, dropped=0, digests=None, logs=None, queued=None,
                 recirculate=None):
        self.outputs = outputs or []
        self.dropped = dropped
        self.digests = digests or []
        self.logs = logs or []
        self.queued = queued or []
        self.recirculate = recirculate or []


@cython.freelist(32)
cdef class EgressItem:
    cdef public object port, priority, length, pkt

    def __init__(self, port, priority, length, pkt):
        self.port = port
        self.priority = priority
        self.length = length
        self.pkt = pkt


@cython.freelist(32)
cdef class Output:
    cdef public object port, data, instance_type, priority

    def __init__(self, port, data, instance_type=0, priority=0):
        self.port = port
        self.data = data
        self.instance_type = instance_type
        self.priority = priority

    def __repr__(self):
        return (f"Output(port={self.port}, data={self.data!r}, instance_type={self.instance_type}, "
                f"priority={self.priority})")

    def __eq__(self, other):
        return isinstance(other, Output) and (self.port, self.data, self.instance_type, self.priority) \\
            == (other.port, other.data, other.instance_type, other.priority)
#end results


# Makers of the classes above for the compiled driver: no call through the
# type (argument parsing), the same fields as their __init__ sets.
cdef inline PacketContext _new_context(length, now_us, rng):
    cdef PacketContext c = PacketContext.__new__(PacketContext)
    c.length = c.length_reg = length
    c.now_us = now_us
    c.rng = rng
    c.digests = c.logs = ()
    c.checksum_error = 0
    c._pdata = b""
    c.bumps = []
    return c  # (the other fields: None, 0, nocache False, as __new__ leaves them)


cdef inline Cursor _new_cursor(buf):
    cdef Cursor c = Cursor.__new__(Cursor)
    c.buf = buf
    c.end = len(buf)
    return c


cdef inline EgressItem _new_egress_item(port, priority, length, pkt):
    cdef EgressItem e = EgressItem.__new__(EgressItem)
    e.port = port
    e.priority = priority
    e.length = length
    e.pkt = pkt
    return e


cdef inline Output _new_output(port, data, instance_type, priority):
    cdef Output o = Output.__new__(Output)
    o.port = port
    o.data = data
    o.instance_type = instance_type
    o.priority = priority
    return o


cdef Py_ssize_t _headers_len(list out, Py_ssize_t hn):
    # the emitted headers' bytes (out None: hn, all in the frame's
    # scratch), or -1 where one is not bytes
    cdef Py_ssize_t n = 0
    if out is None:
        return hn
    for item in out:
        if type(item) is not bytes:
            return -1
        n += PyBytes_GET_SIZE(item)
    return n


cdef char* _put_headers(char* q, list out, const unsigned char* hb, Py_ssize_t hn):
    # the emitted headers (all bytes; out None: the scratch's hn at hb)
    # copied to q on; the end
    cdef Py_ssize_t n
    if out is None:
        memcpy(q, hb, hn)
        return q + hn
    for item in out:
        n = PyBytes_GET_SIZE(item)
        memcpy(q, PyBytes_AS_STRING(item), n)
        q += n
    return q


cdef bytes _join_out(list out, PacketContext ctx, const unsigned char* hb, Py_ssize_t hn):
    # b"".join(out + [ctx.payload]) without making the payload's view: the
    # emitted headers (out None: the frame's scratch, hn bytes at hb) and
    # the payload copied once into the new frame.
    cdef object pdata = ctx._pdata
    cdef Py_ssize_t off = ctx._poff, n, k
    cdef bytes frame
    cdef char* q
    if type(pdata) is bytes:
        n = _headers_len(out, hn)
        if n >= 0:
            k = PyBytes_GET_SIZE(pdata) - off
            frame = PyBytes_FromStringAndSize(NULL, n + k)
            q = _put_headers(PyBytes_AS_STRING(frame), out, hb, hn)
            memcpy(q, PyBytes_AS_STRING(pdata) + off, k)
            return frame
    if out is None:
        out = [PyBytes_FromStringAndSize(<const char*>hb, hn)]
    out.append(ctx.payload)
    return b"".join(out)


cdef extern from *:
    '''
    #define _aif_refs(o) Py_REFCNT(o)
    #if defined(__GNUC__)
    #pragma GCC diagnostic push
    #pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    #endif
    /* a bytes object written to: its cached hash (if any) no longer holds */
    static inline void _aif_unhash(PyObject* o) { ((PyBytesObject*)o)->ob_shash = -1; }
    #if defined(__GNUC__)
    #pragma GCC diagnostic pop
    #endif
    '''
    Py_ssize_t _aif_refs(PyObject* o)
    void _aif_unhash(PyObject* o)


cdef bytes _rewrite_out(list out, PacketContext ctx, Cursor cur, int lent_refs,
                        const unsigned char* hb, Py_ssize_t hn):
    # _join_out for a unicast packet whose frame and context egress alone
    # holds: where its context is all that still holds the frame it came in
    # (counted: the cursor's hold let go first; ``lent_refs``, the queue's:
    # held by whoever delivered the frame, only to hand it over) and the
    # emitted headers are as long as the parsed ones, they are written over
    # those in place and that frame goes out: no new frame, no copy of the
    # payload. Nobody can see the change: nobody else has the frame.
    cdef object pdata = ctx._pdata
    if cur is not None and cur.buf is pdata:
        cur.buf = None
    if type(pdata) is not bytes or _aif_refs(<PyObject*>pdata) != 2 + lent_refs \\
            or _headers_len(out, hn) != ctx._poff:  # (refs: ctx's and pdata, and the lent)
        return _join_out(out, ctx, hb, hn)
    _put_headers(PyBytes_AS_STRING(pdata), out, hb, hn)
    _aif_unhash(<PyObject*>pdata)
    return pdata


cdef inline unsigned long long _masked_int(double x, unsigned long long mask):
    # ``int(x) & mask`` of a time in microseconds (|x| < 2**63): in C
    return (<unsigned long long>(<long long>x)) & mask


cdef inline int _count_cells(list packets, list byte_cells, Py_ssize_t i, object nbytes) except -1:
    # a counter's cells at i (in range, checked) count a packet of nbytes:
    # the generated code's count and a cached pass's replay of it
    packets[i] = packets[i] + 1
    byte_cells[i] = byte_cells[i] + nbytes
    return 0


cpdef object _c_replay_bumps(tuple bumps, object nbytes):
    # .decisions.replay_bumps
    for b in bumps:
        if type(b) is tuple:
            _count_cells((<tuple>b)[0], (<tuple>b)[1], (<tuple>b)[2], nbytes)
        else:
            b.packets += 1
            b.bytes += nbytes
"""
TWIN_NAMES = ("PacketContext", "Cursor", "ProcessResult", "EgressItem", "Output")
# Where the compiled results module is in use (the speedups group), the
# program's module cimports its classes in place of its own three, and the
# decision cache's (.decision_cache): the data plane reads what the module
# returns in C, the module the cache's entries and counts.
RESULTS_CIMPORT = ("from emulator.p4.exec.results cimport "
                   "EgressItem, Output, ProcessResult, QueueInfo\n"
                   "from emulator.p4.exec.decision_cache cimport DecisionCache")
_OWN_RESULTS = re.compile(r"^#results:\n.*?^#end results\n", re.M | re.S)


# ... and its egress reads the packet's item and the queue's figures in C,
# its ingress the decision cache's entries and counts.
CYTHON_SHARED_RESULTS = {
    "    #cy: cdef Cursor cur\n": "    #cy: cdef Cursor cur\n    #cy: cdef DecisionCache decisions\n",
    "    result = ProcessResult.__new__(ProcessResult)  # (as in ingress)\n":
        "    cdef QueueInfo q\n    cdef EgressItem it = item\n"
        "    result = ProcessResult.__new__(ProcessResult)\n",
    "    port = item.port\n    f = item.pkt\n": "    port = it.port\n    f = it.pkt\n",
    "        queue = PIPE._no_queue\n": "        queue = PIPE._no_queue\n    q = queue\n",
    "queue.enq_timestamp_us": "q.enq_timestamp_us",
    "queue.enq_qdepth": "q.enq_qdepth",
    "queue.deq_qdepth": "q.deq_qdepth",
    "getattr(queue, 'lent_refs', 0)": "q.lent_refs",
}


def cython_twins(shared_results: bool) -> str:
    """:data:`CYTHON_TWINS`, with the results classes cimported from
    :mod:`.results` where ``shared_results``."""
    if not shared_results:
        return CYTHON_TWINS
    return _OWN_RESULTS.sub(RESULTS_CIMPORT + "\n", CYTHON_TWINS)
# Python functions the compiled driver has a C twin of (by qualified name),
# as .c_headers.C_TWINS.
DRIVER_C_TWINS = {"emulator.p4.exec.decision_cache.replay_bumps": ("_c_replay_bumps",
                                                                   "tuple bumps, object nbytes")}

BLOCKS = ("__PARSER__", "__VERIFY__", "__INGRESS__", "__EGRESS__", "__COMPUTE__", "__DEPARSER__")


# The compiled driver makes its objects with the makers above, and masks
# its timestamps in C.
CYTHON_MAKERS = {"PacketContext(": "_new_context(", "Cursor(": "_new_cursor(",
                 "EgressItem(": "_new_egress_item(", "Output(": "_new_output("}
_MASKED_INT = re.compile(r"int\(([^()]*)\) & (0x[0-9A-F]+)")
# ... and, where the module has the decision cache's accessors
# (.cython_module: the pipeline gives its cache those), reads a packet's key
# and replays an entry in C.
# ... keeps the payload as (frame, offset) and builds the frame out of it,
CYTHON_PAYLOAD = {
    "ctx.payload = memoryview(data)[cur.off:] if cur.off else data":
        "ctx._pdata = data; ctx._poff = cur.off",
    "ctx.payload = ictx.payload": "ctx._pdata = ictx._pdata; ctx._poff = ictx._poff",
    "    out = []\n    f.pkt_out = out\n": "    f._hn = 0  # (the deparser's scratch, see .cython_module)\n"
                                         "    f.pkt_out = None\n",
    "out.append(ctx.payload)\n    data = b\"\".join(out)":
        "out = f.pkt_out  # (None: every header is in f's scratch)\n"
        "    if owned and ctx.clone is None and _aif_refs(<PyObject*>f) == 2 \\\n"
        "            and _aif_refs(<PyObject*>ctx) == 2:  # (f, item.pkt; ctx, f._ctx)\n"
        "        data = _rewrite_out(out, ctx, f.pkt_in, getattr(queue, 'lent_refs', 0),\n"
        "                            f._hb, f._hn)\n"
        "    else:\n"
        "        data = _join_out(out, ctx, f._hb, f._hn)",
}
# ... and reads the pipeline's clock, random stream and number of priority
# queues from locals bind() sets (.cython_module; the pipeline sets each once,
# in its __init__), not through the pipeline object each packet.
CYTHON_PIPE = {"PIPE._clock_us()": "PIPE_clock_us()", "PIPE.rng": "PIPE_rng",
               "PIPE.priority_queues": "PIPE_priority_queues"}
PIPE_LOCALS = ("    PIPE_clock_us = PIPE._clock_us", "    PIPE_rng = PIPE.rng",
               "    PIPE_priority_queues = PIPE.priority_queues")
CYTHON_KEYED = {
    "key = decisions.read_key(f)": "key = _dc_read_key(f)",
    "cached = decisions.entries.get(key)": "cached = (<dict>decisions.entries).get(key)",
    "write(f, values)": "_dc_write(write, f, values)",
}


def driver_source(block_fns: list[str], sm_class: str, cython: bool,
                  keyed: bool = False, shared_results: bool = False) -> str:
    """The driver for a program whose six V1Switch blocks are the functions
    ``block_fns`` (in package order) and whose standard metadata is the
    class ``sm_class``; ``cython``: with the declarations and the makers;
    ``keyed``: the module has the decision cache's accessors;
    ``shared_results``: it cimports :mod:`.results` (:func:`cython_twins`)."""
    text = DRIVER.replace("__SM__", sm_class)
    for placeholder, fn in zip(BLOCKS, block_fns):
        text = text.replace(placeholder, fn)
    if cython:
        for call, maker in (CYTHON_MAKERS | CYTHON_PAYLOAD | CYTHON_PIPE
                            | (CYTHON_KEYED if keyed else {})
                            | (CYTHON_SHARED_RESULTS if shared_results else {})).items():
            assert call in text, call
            text = text.replace(call, maker)
        text = _MASKED_INT.sub(r"_masked_int(\1, \2)", text)
        return text.replace("#cy: ", "")
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#cy: "))
