"""Shared builders for analysis and report tests: the seed's Linear(768→1000) at batch 32."""

from neural_cost import (
    Coverage,
    HardwareSpec,
    Measurement,
    Operation,
    TensorSpec,
    Trace,
    estimate_trace,
)

SEED_OP = Operation("classifier", "linear", ((32, 768), (768, 1000)), (32, 1000), 2)
SEED_BOUNDARY = (
    TensorSpec("x", (32, 768), "float16", "input"),
    TensorSpec("weight", (768, 1000), "float16", "parameter"),
    TensorSpec("y", (32, 1000), "float16", "output"),
)
M3_PRO = HardwareSpec("M3 Pro", peak_flops=7.4e12, memory_bandwidth=150e9)
SAMPLES = (40e-6, 44e-6, 40e-6, 42e-6, 38e-6)


def seed_estimate(coverage=None):
    trace = Trace(
        (SEED_OP,),
        coverage or Coverage.full((SEED_OP,)),
        input_shapes=[("x", (32, 768))],
        boundary=SEED_BOUNDARY,
        framework="custom",
    )
    return estimate_trace(trace)


def cpu_measurement(samples=SAMPLES):
    return Measurement(
        samples,
        device="Intel Xeon Platinum 8480C",
        device_kind="cpu",
        device_source="test",
        warmup_seconds=(1e-4,) * 3,
        sync="none needed",
    )


def glibc_defaults(monkeypatch):
    """The environment of a process that left glibc's allocator at its defaults (skip where the C
    library is not glibc): no MALLOC_*_ variable, nothing preloaded, no tunables."""
    import platform

    import pytest

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's behaviour is what is modeled")
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setenv("GLIBC_TUNABLES", "")
    # the allocator is read from the environment the process started with: the tests steer it
    # through os.environ instead
    import os

    from neural_cost.analysis import fresh_pages

    monkeypatch.setattr(fresh_pages, "start_environment", lambda: os.environ)


def load_benchmark(file: str, name: str):
    """A script of ``benchmarks/`` as module ``name`` (registered: dataclasses look their module up by name),
    with that folder on the path while it loads (it imports ``heldout_models`` beside it)."""
    import importlib.util
    import sys
    from pathlib import Path

    folder = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, Path(folder) / file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(name, module)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(folder)
