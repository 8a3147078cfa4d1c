"""The simulator's compiled modules (emulator.speedups): a build loads only
for the sources it was built from, can be turned off, says in one line why
it failed, and runs scenarios to the same bytes as the Python modules
(tests/unit/sim/test_sim_speedups.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emulator import speedups
from emulator.speedups.build import build
from emulator.speedups.toolchain import Unavailable, missing

REPO = Path(__file__).resolve().parents[2]


def _copy_group(root: Path, group: tuple[str, ...]) -> None:
    for name in group:
        for src in speedups.source_files(name, REPO):
            if src.exists():
                dst = root / src.relative_to(REPO)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


def test_the_key_follows_every_source_of_the_group(tmp_path: Path) -> None:
    _copy_group(tmp_path, speedups.GROUP)
    key = speedups.source_key(root=tmp_path)
    assert key == speedups.source_key(root=REPO)
    pxd = tmp_path / "emulator/sim/engine.pxd"
    pxd.write_text(pxd.read_text() + "\n")
    assert speedups.source_key(root=tmp_path) != key
    py = tmp_path / "emulator/targets/builtin/tm.py"
    pxd.write_text((REPO / "emulator/sim/engine.pxd").read_text())
    assert speedups.source_key(root=tmp_path) == key
    py.write_text(py.read_text() + "# edited\n")
    assert speedups.source_key(root=tmp_path) != key


def test_the_finder_loads_only_a_build_of_these_sources(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFABRIC_CACHE", str(tmp_path))
    monkeypatch.delenv(speedups.ENV, raising=False)
    assert speedups.Finder().find_spec("emulator.sim.engine") is None  # nothing built here
    stale = tmp_path / "speedups" / ("0" * 20)
    stale.mkdir(parents=True)
    for name in speedups.GROUP:
        (stale / speedups.ext_name(name)).write_bytes(b"")
    assert speedups.Finder().find_spec("emulator.sim.engine") is None  # another key
    fresh = tmp_path / "speedups" / speedups.source_key()
    shutil.copytree(stale, fresh)
    spec = speedups.Finder().find_spec("emulator.sim.engine")
    assert spec is not None and spec.origin == str(fresh / speedups.ext_name("emulator.sim.engine"))
    assert speedups.Finder().find_spec("emulator.sim.fabric") is None  # not in the group
    monkeypatch.setenv(speedups.ENV, "0")
    assert speedups.Finder().find_spec("emulator.sim.engine") is None


def test_a_failed_build_says_where_in_one_line(tmp_path: Path) -> None:
    group = ("emulator.sim.engine",)
    _copy_group(tmp_path / "src", group)
    (tmp_path / "src/emulator/sim/engine.pxd").write_text(
        "cdef class SimClock:\n    cdef public double now\n    cdef nonsense here\n")
    with pytest.raises(Unavailable) as info:
        build(group, root=tmp_path / "src", cache=tmp_path / "cache")
    message = str(info.value)
    assert "\n" not in message
    assert f"{tmp_path}/src/emulator/sim/engine.pxd:3:" in message, message
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]  # nothing half-built


def test_a_build_is_made_once_and_loads_in_a_fresh_process(tmp_path: Path) -> None:
    if missing() is not None:
        pytest.skip(f"cannot build extensions here: {missing()} (make setup installs them)")
    group = ("emulator.targets.builtin.pfc",)
    folder = build(group, cache=tmp_path)
    assert (folder / speedups.ext_name(group[0])).exists()
    mtime = (folder / speedups.ext_name(group[0])).stat().st_mtime_ns
    assert build(group, cache=tmp_path) == folder
    assert (folder / speedups.ext_name(group[0])).stat().st_mtime_ns == mtime
    code = ("import sys, importlib.util\n"
            "from importlib.machinery import ExtensionFileLoader\n"
            f"spec = importlib.util.spec_from_loader('{group[0]}', ExtensionFileLoader("
            f"'{group[0]}', '{folder / speedups.ext_name(group[0])}'))\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "t = m.PauseTimers(); assert t.pause(3, 2.0, 1.0) and not t.pause(3, 2.5, 1.0)\n"
            "assert t.mask == 8 and t.expired(3, 2.5) and t.resume(3, 2.0)\n"
            "assert t.paused_s[3] == 1.0 and m.__file__.endswith('.so')\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_status_says_whether_this_python_runs_them() -> None:
    env = {**os.environ, speedups.ENV: "0"}
    done = subprocess.run([sys.executable, "-m", "emulator.speedups", "status"], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0
    assert done.stdout.strip() == f"speedups: python ({speedups.ENV}=0)"
    done = subprocess.run([sys.executable, "-m", "emulator.speedups", "frobnicate"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "allowed: build, status" in done.stderr


def test_builds_not_used_for_a_month_are_removed(tmp_path: Path) -> None:
    from emulator.speedups.toolchain import KEEP_DAYS, remove_unused
    month_ago = __import__("time").time() - (KEEP_DAYS + 1) * 86400
    old_file, old_dir = tmp_path / "old.so", tmp_path / "old-build"
    new_file, new_dir = tmp_path / "new.so", tmp_path / "new-build"
    old_file.write_bytes(b"")
    new_file.write_bytes(b"")
    for d in (old_dir, new_dir):
        d.mkdir()
        (d / "m.so").write_bytes(b"")
    for p in (old_file, old_dir):
        os.utime(p, (month_ago, month_ago))
    remove_unused(tmp_path.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new-build", "new.so"]
