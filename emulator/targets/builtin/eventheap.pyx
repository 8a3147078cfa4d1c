"""The heap of timed events (see eventheap.py, the reference this does the
same as) on an array of C structs of 64 bytes: entries compare by a double
and three 64-bit words, with no Python object touched until one is
popped."""

from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdlib cimport free, malloc, realloc

cdef double INF = float("inf")


cdef inline bint _less(Slot* a, Slot* b) noexcept nogil:
    if a.t != b.t:
        return a.t < b.t
    if a.major != b.major:
        return a.major < b.major
    if a.minor != b.minor:
        return a.minor < b.minor
    return a.seq < b.seq


cdef class EventHeap:
    # (slots, n, cap, _seq, t, kind, arg: eventheap.pxd)
    def __cinit__(self):
        self.cap = 1024
        self.n = 0
        self._seq = 0
        self.t = 0.0
        self.kind = 0
        self.slots = <Slot*>malloc(self.cap * sizeof(Slot))
        if self.slots == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.slots != NULL:
            for i in range(self.n):
                Py_XDECREF(self.slots[i].target)
                Py_XDECREF(self.slots[i].arg)
                Py_XDECREF(self.slots[i].arg2)
            free(self.slots)

    def __len__(self):
        return self.n

    cpdef push(self, double t, unsigned long long major, unsigned long long minor, long kind,
               object target, object arg, object arg2):
        cdef Slot s
        cdef Slot* grown
        cdef Py_ssize_t i, parent
        if self.n == self.cap:
            grown = <Slot*>realloc(self.slots, 2 * self.cap * sizeof(Slot))
            if grown == NULL:
                raise MemoryError()
            self.slots = grown
            self.cap *= 2
        s.t = t
        s.major = major
        s.minor = minor
        self._seq += 1
        s.seq = self._seq
        s.kind = kind
        Py_INCREF(target)
        Py_INCREF(arg)
        Py_INCREF(arg2)
        s.target = <PyObject*>target
        s.arg = <PyObject*>arg
        s.arg2 = <PyObject*>arg2
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
        self.t = top.t
        self.kind = top.kind
        self.arg = <object>top.arg
        self.arg2 = <object>top.arg2
        target = <object>top.target
        Py_XDECREF(top.target)  # the references the slot held go to target and the attributes
        Py_XDECREF(top.arg)
        Py_XDECREF(top.arg2)
        return target

    cpdef double peek_time(self):
        return self.slots[0].t if self.n else INF
