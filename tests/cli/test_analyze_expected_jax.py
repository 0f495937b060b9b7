"""``neural-cost analyze --expected`` on a JAX program reads the kernels of the executable it timed.

JAX's adapter keeps the last four executables it compiled, and the trace reads the timed
program's kernels from the one kept. The expectation's side runs — the floor's batch-1 program
and the calibration's drift probes (five here) — compile programs of their own: run on the
same adapter, they pushed the timed executable out, and the report fell back to scoring every
operation as its own kernel at its unfused traffic, with a bound and an expected time unlike
those of the same command without ``--expected``.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from neural_cost.cli.main import main

pytest.importorskip("jax")

BUILD = """
import jax
import jax.numpy as jnp

@jax.jit
def layer(x, w):
    return jnp.tanh(x @ w)

def build(batch=64):
    return layer, (jnp.ones((batch, 128)), jnp.ones((128, 256)))
"""

#: Five programs of JAX's quick grid: with the floor's program, more than the four kept.
PROBES = ("relu 1000", "add 1000", "gelu 1000", "sum (3, 256)", "softmax (3, 256)")


def test_the_expectation_leaves_the_timed_executable_to_the_trace(tmp_path, capsys):
    from neural_cost.adapters import adapter_for
    from neural_cost.analysis.calibrate_kernels import calibration_path
    from neural_cost.analysis.expected import installed_versions
    from neural_cost.hardware.host_calibration import live_machine_key
    from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration, save_calibration

    spec = adapter_for("jax").hardware()
    curve = Curve((-7.0, -3.0), (-6.0, -3.0 + math.log10(2)))
    calibration = KernelCalibration(
        "jax", spec, {"matmul": ClassModel("matmul", curve, None, points=8)}, machine=live_machine_key(),
        versions=installed_versions("jax"), date="2026-12-02",
    )  # fmt: skip
    probes = {name: ("elementwise", 1e-5) for name in PROBES}
    cached = calibration_path("jax")  # the test session's cache, removed after
    save_calibration(replace(calibration, probes=probes), cached)
    script = tmp_path / "layer.py"
    script.write_text(BUILD)
    out = tmp_path / "report.json"
    fast = ["--warmup", "1", "--repeats", "3", "--no-profile", "--json", str(out)]
    try:
        assert main(["analyze", f"{script}:build", "--expected", *fast]) == 0
    finally:
        cached.unlink()
    text = capsys.readouterr().out
    # the side runs did run: the floor's batch-1 program and the probes (their ratio is timing, unasserted)
    assert "note: framework floor " in text and "calibration probes re-run at " in text
    assert "no compiled program read" not in text
    report = json.loads(out.read_text())
    kernels = report["estimate"]["kernels"]
    assert kernels, "the timed executable's kernels were not read"
    # the expectation is of the compiled kernels: one row per kernel, named as XLA names them
    assert {row["name"] for row in report["expected"]["rows"]} == {kernel["name"] for kernel in kernels}
