"""The engine's event heap: the C one (eventheap.pyx, where emulator.speedups
built it) pops what the reference (eventheap.py) pops, in the same order, for
the same pushes: ties on time broken by the two order words, then by push
order."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from emulator import speedups
from emulator.speedups.build import build
from emulator.speedups.toolchain import missing

SOURCE = Path(__file__).resolve().parents[3] / "emulator/targets/builtin/eventheap.py"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("eventheap_reference", SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compiled() -> ModuleType:
    if missing() is not None:  # (a failed build where it can be built fails the test)
        pytest.skip(f"cannot build extensions here: {missing()}")
    folder = build()
    name = "emulator.targets.builtin.eventheap"
    module = sys.modules.get(name)
    if module is not None and module.__spec__ is not None and \
            str(module.__spec__.origin).startswith(str(folder)):
        return module
    spec = importlib.util.spec_from_file_location(name, folder / speedups.ext_name(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _drive(module: ModuleType, seed: int) -> list[tuple]:  # type: ignore[type-arg]
    rng = random.Random(seed)
    heap = module.EventHeap()
    popped: list[tuple] = []  # type: ignore[type-arg]
    pushed = 0
    for _ in range(20_000):
        if rng.random() < 0.55:
            t = rng.choice([0.0, 1e-6, 2e-6, rng.random() * 1e-3, float("inf")])
            major, minor = (rng.choice([0, 1, 1 << 60, (2 << 60) + rng.randrange(1 << 40),
                                        rng.randrange(1 << 64), (1 << 64) - 1])
                            for _ in range(2))
            pushed += 1
            heap.push(t, major, minor, rng.randrange(3), ("target", pushed), pushed, -pushed)
        else:
            popped.append(_pop(heap, rng.choice([0.0, 1e-6, 5e-4, float("inf")])))
        assert len(heap) == pushed - sum(1 for p in popped if p is not None)
    while len(heap):
        popped.append(_pop(heap, float("inf")))
    assert heap.pop_due(float("inf")) is None and heap.peek_time() == float("inf")
    return popped


def _pop(heap, until: float) -> tuple | None:  # type: ignore[no-untyped-def, type-arg]
    target = heap.pop_due(until)
    return None if target is None else (heap.t, heap.kind, target, heap.arg, heap.arg2)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_c_heap_pops_what_the_reference_pops(seed: int) -> None:
    reference, compiled = _reference(), _compiled()
    assert compiled.__file__ != reference.__file__
    assert _drive(compiled, seed) == _drive(reference, seed)


@pytest.mark.parametrize("which", ["compiled", "reference"])
def test_an_order_word_outside_64_bits_is_refused(which: str) -> None:
    heap = (_compiled() if which == "compiled" else _reference()).EventHeap()
    for word in (-1, 1 << 64):
        with pytest.raises(OverflowError):
            heap.push(0.0, word, 0, 0, None, None, None)
        with pytest.raises(OverflowError):
            heap.push(0.0, 0, word, 0, None, None, None)
    heap.push(0.0, (1 << 64) - 1, (1 << 64) - 1, 0, None, None, None)  # the largest order there is
    assert len(heap) == 1


def test_objects_in_the_heap_are_released_with_it() -> None:
    heap = _compiled().EventHeap()
    held = object()
    before = sys.getrefcount(held)
    for i in range(3000):  # grows past its first array
        heap.push(float(i), i, 0, 0, held, held, held)
    assert sys.getrefcount(held) == before + 9000
    target = heap.pop_due(10.0)
    assert (heap.t, heap.kind, target is held, heap.arg is held, heap.arg2 is held) == \
        (0.0, 0, True, True, True)
    del target
    assert sys.getrefcount(held) == before + 8999  # (the last popped args: heap.arg, .arg2)
    heap.pop_due(10.0)  # (its target dropped at once, its args now heap.arg and .arg2)
    assert sys.getrefcount(held) == before + 8996
    del heap
    assert sys.getrefcount(held) == before
