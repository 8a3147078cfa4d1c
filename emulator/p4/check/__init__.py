"""The type checker: turns the syntax tree into the typed IR.

Name resolution, type checking, literal typing, constant folding,
instantiation of parsers and controls (one IR block per instance, objects
named as p4c names them) and the v1model package. Errors are collected as
diagnostics and raised together as one :class:`~emulator.p4.errors.CompileError`.

- :mod:`.context` scopes, symbols and diagnostics;
- :mod:`.typeres` syntax types → :mod:`emulator.p4.types`;
- :mod:`.fold` constant folding;
- :mod:`.expr` expressions; :mod:`.calls` method and function calls;
- :mod:`.stmt` statements; :mod:`.blocks` parsers, controls, tables;
- :mod:`.program` the whole program and the package;
- :mod:`.v1model` what v1model and p4c's BMv2 back end add (clone, resubmit,
  recirculate placement).
"""

from emulator.p4.check.program import check_program

__all__ = ["check_program"]
