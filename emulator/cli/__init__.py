"""The ``aifabric`` command: argument parsing, usage errors and exit codes.

Only this package prints usage errors and exits; everything below it raises.
"""
