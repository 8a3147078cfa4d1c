"""From a device config (what ``simple_switch_grpc`` takes as its JSON file,
and P4Runtime's ``SetForwardingPipelineConfig`` as ``p4_device_config``) to
a :class:`~emulator.p4.exec.pipeline.V1ModelPipeline`.

The switch does not know the device-config format: a *pipeline loader*
(``loader(config_bytes, priority_queues=N[, seed=S]) -> V1ModelPipeline``)
does. ``seed`` seeds the program's random stream; it is passed only when
not 0, so loaders that take no seed keep working. The
default loader hands the bytes to ``emulator.p4.device.build_pipeline`` —
the P4 toolchain's entry point — and says so plainly when the toolchain has
none yet. Tests and the P4Runtime server may pass their own loader.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.targets.builtin.errors import PipelineLoadError

DEVICE_MODULE = "emulator.p4.device"
DEVICE_FUNCTION = "build_pipeline"


class PipelineLoader(Protocol):
    def __call__(self, config: bytes, *, priority_queues: int) -> V1ModelPipeline: ...


def default_pipeline_loader(config: bytes, *, priority_queues: int,
                            seed: int = 0) -> V1ModelPipeline:
    """Build the pipeline with ``emulator.p4.device.build_pipeline``."""
    try:
        device = importlib.import_module(DEVICE_MODULE)
    except ImportError as exc:
        if exc.name not in (DEVICE_MODULE, "emulator.p4"):
            raise PipelineLoadError(f"{DEVICE_MODULE} failed to import: {exc}") from exc
        raise PipelineLoadError(
            f"no P4 front end available: {DEVICE_MODULE} is not importable, so this switch "
            "cannot load a device config (start it with --no-p4, or give run_switch a pipeline)"
        ) from None
    build = getattr(device, DEVICE_FUNCTION, None)
    if build is None:
        raise PipelineLoadError(
            f"no P4 front end available: {DEVICE_MODULE} has no {DEVICE_FUNCTION}()")
    return build(config, priority_queues=priority_queues, seed=seed)


def load_device_config(path_or_bytes: str | Path | bytes, loader: PipelineLoader | None = None,
                       *, priority_queues: int = 8, seed: int = 0) -> V1ModelPipeline:
    """A pipeline from a device-config file (path) or its bytes."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        config = bytes(path_or_bytes)
        source = "<device config>"
    else:
        source = str(path_or_bytes)
        try:
            config = Path(path_or_bytes).read_bytes()
        except OSError as exc:
            raise PipelineLoadError(f"{source}: {exc.strerror or exc}") from None
    try:
        options = {"seed": seed} if seed else {}
        return (loader or default_pipeline_loader)(config, priority_queues=priority_queues,
                                                   **options)
    except PipelineLoadError:
        raise
    except Exception as exc:  # the front end's own error types: keep their message
        raise PipelineLoadError(f"{source}: {exc}") from exc
