"""A PTF suite run the way the p4lang tutorials run theirs (``runptf.sh``:
compile the solution, start the switch with ``--no-p4`` on eight veth
pairs, ``ptf --test-dir``), against each switch the same way: ``aifabric p4
compile`` and ``aifabric-switch``, and p4c (``p4c-bm2-ss``) and BMv2's
``simple_switch_grpc`` (where installed), with the same command-line shape,
the same namespace and the same suite, so that one switch passing and the
other failing is the switch's doing, not the harness's. Every test of the
suite reconnects with election id 1 right after the previous one closed,
and pushes the pipeline inside a ``p4.tmp.P4DeviceConfig``.

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

from emulator.network import bmv2
from emulator.network.netlink import in_netns
from emulator.network.process import port_open

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "tests" / "tutorial_kit"
VENV_BIN = Path(sys.executable).parent
PORTS = range(8)
SUITE_TESTS = 7  # test classes in tests/tutorial_kit/ptf/relay_ptf.py
GRPC_PORT = 9559
TARGETS = ["builtin", pytest.param("bmv2", marks=pytest.mark.bmv2)]


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


def switch_command(target: str, log: Path) -> list[str]:
    """The tutorials' switch command line, for either switch."""
    binary = (str(VENV_BIN / "aifabric-switch") if target == "builtin"
              else bmv2.require_tool(bmv2.SWITCH_BINARY))
    return [binary, *(f"-i{i}@veth{2 * i}" for i in PORTS), "--log-file", str(log), "--no-p4",
            "--", "--grpc-server-addr", f"127.0.0.1:{GRPC_PORT}"]


def compile_relay(target: str, build: Path) -> tuple[Path, Path]:
    """relay.p4's device config and P4Info, by the target's own compiler."""
    source = KIT / "exercise" / "solution" / "relay.p4"
    config, p4info = build / "relay.json", build / "relay.p4info.txtpb"
    build.mkdir(parents=True, exist_ok=True)
    if target == "builtin":
        cmd = [str(VENV_BIN / "aifabric"), "p4", "compile", str(source), "-o", str(config),
               "--p4info", str(p4info)]
    else:
        cmd = bmv2.compile_command(str(source), str(config), str(p4info))
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return config, p4info


@pytest.fixture(params=TARGETS)
def switch(request, namespace, tmp_path):
    target = request.param
    log = tmp_path / "switch.log"
    cmd = ["ip", "netns", "exec", namespace, *switch_command(target, log)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 30
        while not in_netns(f"/run/netns/{namespace}", lambda: port_open("127.0.0.1", GRPC_PORT)):
            assert proc.poll() is None, f"{target} exited: {log.read_text() if log.exists() else ''}"
            assert time.monotonic() < deadline, f"{target}: gRPC not up in 30 s"
            time.sleep(0.1)
        yield target, proc, log
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_the_ptf_suite_passes_on_each_switch(namespace, switch, tmp_path):
    ptf = VENV_BIN / "ptf"
    if not ptf.exists():
        pytest.skip("ptf is not installed in the venv (make setup installs the dev extras)")
    target, proc, log = switch
    config, p4info = compile_relay(target, tmp_path / "build")
    params = f"grpcaddr='127.0.0.1:{GRPC_PORT}';p4info='{p4info}';config='{config}'"
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
    assert proc.poll() is None, f"{target} did not survive the suite"
    logs = [path for path in (log, log.with_name(log.name + ".txt")) if path.exists()]
    assert logs and all("election id already used" not in p.read_text() for p in logs)
