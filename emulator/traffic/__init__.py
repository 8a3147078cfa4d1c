"""hosts: RoCEv2 layers, NIC agent, collective generators"""

from emulator.speedups import install as _install_speedups

# this package's modules in emulator.speedups.GROUP load compiled where built
_install_speedups()
