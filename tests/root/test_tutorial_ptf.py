"""A PTF suite run the way the p4lang tutorials run theirs (``runptf.sh``:
compile the solution, start the switch with ``--no-p4`` on eight veth
pairs, ``ptf --test-dir``), with ``aifabric p4 compile`` and
``aifabric-switch`` in place of p4c and ``simple_switch_grpc``. Every test
of the suite reconnects with election id 1 right after the previous one
closed, and pushes the pipeline inside a ``p4.tmp.P4DeviceConfig``.

Everything lives in one namespace made for the test: the veth pairs
(``veth0``..``veth15``, as the tutorials' ``veth_setup.sh`` names them), the
switch and its gRPC port on that namespace's loopback, and ptf.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "tests" / "tutorial_kit"
VENV_BIN = Path(sys.executable).parent
PORTS = range(8)
SUITE_TESTS = 7  # test classes in tests/tutorial_kit/ptf/relay_ptf.py


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


@pytest.fixture
def namespace():
    name = f"afptf{os.getpid() % 100000}"
    sh("ip", "netns", "add", name)
    try:
        sh("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
        for i in PORTS:
            a, b = f"veth{2 * i}", f"veth{2 * i + 1}"
            sh("ip", "netns", "exec", name, "ip", "link", "add", a, "type", "veth", "peer", "name", b)
            for end in (a, b):
                sh("ip", "netns", "exec", name, "sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1")
                sh("ip", "netns", "exec", name, "ip", "link", "set", end, "mtu", "9500", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


@pytest.fixture
def switch(namespace, tmp_path):
    log = tmp_path / "switch.log"
    cmd = ["ip", "netns", "exec", namespace, str(VENV_BIN / "aifabric-switch"), "--no-p4",
           "--log-file", str(log), "--grpc-server-addr", "127.0.0.1:9559",
           *(f"-i{i}@veth{2 * i}" for i in PORTS)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while "ready" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None, f"switch exited: {log.read_text() if log.exists() else ''}"
            assert time.monotonic() < deadline, "switch not ready in 30 s"
            time.sleep(0.1)
        yield proc, log
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_the_ptf_suite_passes_against_aifabric_switch(namespace, switch, tmp_path):
    ptf = VENV_BIN / "ptf"
    if not ptf.exists():
        pytest.skip("ptf is not installed in the venv (make setup installs the dev extras)")
    build = tmp_path / "build"
    subprocess.run([str(VENV_BIN / "aifabric"), "p4", "compile",
                    str(KIT / "exercise" / "solution" / "relay.p4"), "-o", str(build / "relay.json"),
                    "--p4info", str(build / "relay.p4info.txtpb")], check=True, capture_output=True,
                   timeout=120)
    params = (f"grpcaddr='127.0.0.1:9559';p4info='{build / 'relay.p4info.txtpb'}';"
              f"config='{build / 'relay.json'}'")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["ip", "netns", "exec", namespace, str(ptf), *(f"-i{i}@veth{2 * i + 1}" for i in PORTS),
         f"--test-params={params}", "--test-dir", str(KIT / "ptf")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    ran = re.search(r"Ran (\d+) tests?", output)
    assert ran is not None and int(ran.group(1)) == SUITE_TESTS, output[-2000:]
    assert re.search(r"^OK", output, re.M), output[-2000:]
    proc, log = switch
    assert proc.poll() is None, "the switch survived the suite"
    assert "election id already used" not in log.read_text()
