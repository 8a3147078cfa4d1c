"""The P4 toolchain of the built-in target.

A front end for P4-16 with the v1model architecture: ``preprocessor`` (cpp
subset with a source map; ``#if`` expressions in ``preprocessor_expr``),
``lexer`` (tokens, type-name tracking), ``parser`` (LALR driver over
``grammar/p4.lark``, syntax errors) and ``tree_builder`` (syntax tree of
the ``ast`` package), ``check`` (names and types, to the typed ``ir``),
``p4info`` (P4Info with p4c's ids) and ``exec`` (the executor).
``include/`` holds our ``core.p4`` and ``v1model.p4``. Every program
accepted must be one p4c accepts; valid P4 beyond this toolchain is refused
with :class:`errors.UnsupportedError`.

This package imports nothing else of ``emulator``: it could ship alone.
"""
