#!/usr/bin/env bash
# Installs what aifabric needs and is missing: Debian packages, then the
# project's venv (made from the system Python so Mininet's module is visible),
# then the project itself in editable mode. Idempotent; fast when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(mininet iproute2 iputils-ping net-tools tcpdump ethtool python3-venv python3-pip python3-dev gcc make shellcheck ruby openmpi-bin python3-mpi4py chromium)
VENV=.venv
STAMP="$VENV/.aifabric-setup"

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if ((${#missing[@]})); then
    if [[ $EUID -ne 0 ]]; then
        echo "setup: missing Debian packages (${missing[*]}); run as root: sudo make setup" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "setup: creating $VENV from /usr/bin/python3 (with system site-packages for Mininet)"
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi

want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [[ "$want" != "$have" ]]; then
    echo "setup: installing the aifabric package and its Python dependencies"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e '.[dev]'
    echo "$want" > "$STAMP"
fi

# The simulator's hot modules as C extensions (emulator.speedups): built once
# for the sources as they are; without them the same code runs as Python.
if ! "$VENV/bin/python" -m emulator.speedups status 2>/dev/null | grep -q "speedups: compiled"; then
    echo "setup: building the simulator's compiled modules (Cython, about half a minute)"
    "$VENV/bin/python" -m emulator.speedups build || echo "setup: the simulator runs as Python" >&2
fi
