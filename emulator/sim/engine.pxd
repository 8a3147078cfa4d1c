# C types for engine.py when built by emulator.speedups (see there): the
# same code, its classes extension types.
cimport cython

from emulator.targets.builtin.eventheap cimport EventHeap

# the kinds of events: C constants (compared in C in _run)
cdef int _WAKE, _DELIVER, _CALL


cdef class SimClock:
    cdef public double now


cdef class Component:
    cdef public double wake_at
    cdef public object name
    cdef public unsigned long long order
    cpdef double next_time(self) except? -1.0
    cpdef wake(self, double now)


cdef class Landing:
    cdef public Component peer_node
    cdef public unsigned long long order
    cdef public long long sent
    cpdef land(self, object item, object tag, double now)


cdef class Engine:
    cdef public SimClock clock
    cdef public EventHeap _heap
    cdef public long long _calls
    cdef public long long events
    cdef public long long deliveries
    cdef public double wall_s
    cdef public double cpu_s

    @cython.locals(t=double, now=double)
    cpdef schedule(self, Component component)
    cpdef deliver(self, double when, Landing end, object item, object tag)
    @cython.locals(clock=SimClock, heap=EventHeap, t=double, kind=int, events=cython.longlong,
                   same_time=cython.longlong, last_t=double, countdown=cython.longlong, wall=double,
                   cpu=double, component=Component, end=Landing)
    cpdef double _run(self, double until, bint advance, object on_progress,
                      long long progress_every) except? -1.0
