"""The controller: programs every switch of a fabric over P4Runtime.

- :mod:`.fabric_plan` turns a topology, its routing plan and the fabric
  settings (priorities, ECN, PFC) into the entries each switch needs, as
  plain data with fabric.p4's names;
- the P4Runtime client and the controller that pushes plans and reads
  counters build on it.
"""
