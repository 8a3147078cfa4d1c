"""Process and port helpers, the signal guard and the switch monitor (no
root; the only processes started are short ``sleep``s of this test, the
only sockets on loopback)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from emulator.network.errors import FabricInterrupted, SwitchDiedError
from emulator.network.guard import SignalGuard, SwitchMonitor
from emulator.network.process import (
    free_tcp_ports, kill_processes, netns_inode, pid_alive, port_open, proc_cmdline,
    proc_start_time, stop_popen, tail, tcp_port_held,
)


def test_identity_of_this_process():
    me = os.getpid()
    start = proc_start_time(me)
    assert start and pid_alive(me) and pid_alive(me, start)
    assert not pid_alive(me, start + 1)
    assert "pytest" in " ".join(proc_cmdline(me))
    assert netns_inode(me) == os.stat("/proc/self/ns/net").st_ino
    assert proc_start_time(2 ** 22 + 7) is None and not pid_alive(0)


def test_stop_popen_sigterm_then_sigkill():
    polite = subprocess.Popen(["sleep", "30"], start_new_session=True)
    stubborn = subprocess.Popen([sys.executable, "-c",
                                 "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); print('ok', flush=True); time.sleep(30)"],
                                start_new_session=True, stdout=subprocess.PIPE)
    stubborn.stdout.readline()
    started = time.monotonic()
    killed = stop_popen([polite, stubborn], grace_s=0.5)
    assert killed == [stubborn.pid]
    assert polite.returncode == -signal.SIGTERM and stubborn.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 3


def test_kill_processes_spares_a_reused_pid():
    proc = subprocess.Popen(["sleep", "30"])
    try:
        start = proc_start_time(proc.pid)
        assert kill_processes([(proc.pid, start + 1)], grace_s=0.1) == []
        assert proc.poll() is None, "a different start time: not the recorded process"
        assert kill_processes([(proc.pid, start)], grace_s=1.0) == []
        proc.wait(2)
        assert proc.returncode == -signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()


def test_ports_and_tail(tmp_path):
    a, b = free_tcp_ports(2)
    assert a != b and not port_open("127.0.0.1", a)
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert tail(log, 3) == "line 97\nline 98\nline 99"
    assert tail(tmp_path / "absent") == ""


def test_a_port_in_time_wait_is_not_held_a_listening_one_is():
    # The server side closes first, as a switch that exits under its
    # controller does: its end of the connection stays in TIME_WAIT.
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert tcp_port_held("127.0.0.1", port)
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()
        client.recv(1)
        client.close()
    with socket.socket() as plain:   # what the check did before: refused by TIME_WAIT
        with pytest.raises(OSError):
            plain.bind(("127.0.0.1", port))
    assert not tcp_port_held("127.0.0.1", port)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signal handlers need the main thread")
def test_signal_guard_raises_defers_and_restores():
    before = signal.getsignal(signal.SIGTERM)
    pending: list[BaseException] = []
    guard = SignalGuard(lambda: pending.pop() if pending else None)
    assert guard.install()
    try:
        with pytest.raises(FabricInterrupted, match="SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        pending.append(SwitchDiedError("spine0", -9, "/w/spine0.log", "boom"))
        with pytest.raises(SwitchDiedError, match="spine0 was killed by SIGKILL"):
            guard.interrupt_main()
            time.sleep(1)
        guard.quiet = True
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert guard.deferred == signal.SIGINT
    finally:
        guard.restore()
    assert signal.getsignal(signal.SIGTERM) is before
    assert not guard.installed


def test_monitor_reports_the_first_dead_switch(tmp_path):
    log = tmp_path / "leaf.log"
    log.write_text("starting\nsomething went wrong\n")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    proc.wait()
    found: list[SwitchDiedError] = []
    monitor = SwitchMonitor({"leaf": (proc, [str(tmp_path / "empty.log"), str(log)])},
                            found.append, period_s=0.01)
    monitor.start()
    monitor.join(2)
    assert len(found) == 1
    error = found[0]
    assert (error.switch, error.status, error.log_file) == ("leaf", 3, str(log))
    assert "switch leaf exited with status 3" in str(error)
    assert str(error).endswith("something went wrong")
