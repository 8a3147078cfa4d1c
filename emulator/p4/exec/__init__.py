"""The executor: turns a checked program (the IR) into Python code and runs
packets through it as the v1model pipeline of BMv2's simple_switch does.

- :mod:`.layout` generates a Python class per header, struct, union and stack
  type, with extract/emit/copy methods specialised to its fields;
- :mod:`.codegen` compiles parsers, controls, actions and functions to Python
  source, one function each (statements in :mod:`.statements`);
- :mod:`.externs` holds the run-time side of v1model externs (registers,
  counters, meters, hashes, checksums);
- :mod:`.tables` holds table and action-profile state and lookups;
- :mod:`.pipeline` runs a packet through parser, ingress, the hand-off to the
  traffic manager (unicast, multicast, clones, resubmit, recirculate), egress
  and deparser;
- :mod:`.decisions` caches ingress decisions per flow (keyed by the fields
  ingress reads, replayed as the values it wrote and the counters it bumped);
- :mod:`.driver` is the v1model packet flow around the blocks (the pipeline's
  ``ingress``/``egress``), written into the program's generated module;
- :mod:`.compiled` builds that module with Cython instead (headers and frames
  as extension types, the same code typed), cached per program: the compiled
  executor, the same results several times faster.
"""
