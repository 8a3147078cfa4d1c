"""The engine's event heap (see eventheap.py, the reference this does the
same as) on an array of C structs: entries compare by a double and three
64-bit words, with no Python object touched until one is popped."""

from cpython.exc cimport PyErr_Clear
from cpython.long cimport PyLong_Check
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdlib cimport free, malloc, realloc

cdef extern from *:
    """
    /* An int's 16 little-endian bytes, unsigned: -1 (an error set) where it
       is negative or does not fit. */
    #if PY_VERSION_HEX >= 0x030D0000
    #define aif_order_bytes(v, b) _PyLong_AsByteArray((PyLongObject*)(v), (b), 16, 1, 0, 1)
    #else
    #define aif_order_bytes(v, b) _PyLong_AsByteArray((PyLongObject*)(v), (b), 16, 1, 0)
    #endif
    """
    int aif_order_bytes(object v, unsigned char* b)

cdef double INF = float("inf")


cdef inline bint _less(Slot* a, Slot* b) noexcept nogil:
    if a.t != b.t:
        return a.t < b.t
    if a.hi != b.hi:
        return a.hi < b.hi
    if a.lo != b.lo:
        return a.lo < b.lo
    return a.seq < b.seq


cdef class EventHeap:
    # (slots, n, cap, seq: eventheap.pxd)
    def __cinit__(self):
        self.cap = 1024
        self.n = 0
        self.seq = 0
        self.slots = <Slot*>malloc(self.cap * sizeof(Slot))
        if self.slots == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.slots != NULL:
            for i in range(self.n):
                Py_XDECREF(self.slots[i].target)
                Py_XDECREF(self.slots[i].arg)
            free(self.slots)

    def __len__(self):
        return self.n

    cpdef push(self, double t, object order, long kind, object target, object arg):
        cdef Slot s
        cdef Slot* grown
        cdef Py_ssize_t i, parent
        cdef unsigned char b[16]
        cdef int k
        if not PyLong_Check(order):
            raise TypeError(f"event order {order!r} is not an int")
        if aif_order_bytes(order, b) < 0:
            PyErr_Clear()
            raise ValueError(f"event order {order!r} is not in 0 .. 2^128")
        if self.n == self.cap:
            grown = <Slot*>realloc(self.slots, 2 * self.cap * sizeof(Slot))
            if grown == NULL:
                raise MemoryError()
            self.slots = grown
            self.cap *= 2
        s.t = t
        s.hi = s.lo = 0
        for k in range(7, -1, -1):
            s.hi = (s.hi << 8) | b[8 + k]
            s.lo = (s.lo << 8) | b[k]
        self.seq += 1
        s.seq = self.seq
        s.kind = kind
        Py_INCREF(target)
        Py_INCREF(arg)
        s.target = <PyObject*>target
        s.arg = <PyObject*>arg
        i = self.n
        self.n += 1
        while i > 0:
            parent = (i - 1) >> 1
            if _less(&s, &self.slots[parent]):
                self.slots[i] = self.slots[parent]
                i = parent
            else:
                break
        self.slots[i] = s

    cpdef object pop_due(self, double until):
        cdef Slot top, last
        cdef Py_ssize_t i, child, n
        if self.n == 0 or self.slots[0].t > until:
            return None
        top = self.slots[0]
        self.n -= 1
        n = self.n
        if n:
            last = self.slots[n]
            i = 0
            while True:
                child = 2 * i + 1
                if child >= n:
                    break
                if child + 1 < n and _less(&self.slots[child + 1], &self.slots[child]):
                    child += 1
                if _less(&self.slots[child], &last):
                    self.slots[i] = self.slots[child]
                    i = child
                else:
                    break
            self.slots[i] = last
        target = <object>top.target
        arg = <object>top.arg
        Py_XDECREF(top.target)  # the references the slot held go to the locals
        Py_XDECREF(top.arg)
        return (top.t, top.kind, target, arg)

    cpdef double peek_time(self):
        return self.slots[0].t if self.n else INF
