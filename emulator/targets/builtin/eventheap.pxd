# The C struct heap of eventheap.pyx (see eventheap.py), for engine.pxd and
# dataplane.pxd to cimport.
from cpython.ref cimport PyObject

cdef struct Slot:
    double t
    unsigned long long major
    unsigned long long minor
    unsigned long long seq
    long kind
    PyObject* target
    PyObject* arg
    PyObject* arg2


cdef class EventHeap:
    cdef Slot* slots
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef unsigned long long _seq
    cdef public double t
    cdef public long kind
    cdef public object arg, arg2

    cpdef push(self, double t, unsigned long long major, unsigned long long minor, long kind,
               object target, object arg, object arg2)
    cpdef object pop_due(self, double until)
    cpdef double peek_time(self)
