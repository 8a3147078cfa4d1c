"""``python -m emulator.traffic.agent``: see :mod:`.cli`."""

import sys

from emulator.traffic.agent.cli import main

sys.exit(main())
