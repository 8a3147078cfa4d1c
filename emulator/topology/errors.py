"""The error raised for a topology the user got wrong."""


class TopologyError(ValueError):
    """A topology description that cannot be used.

    The message is one line naming the file (when there is one), the key and
    what is allowed; the CLI prints it as is and exits with ``exit_code``.
    """

    exit_code = 2
