"""The examples in examples/ run (small sizes) and say what the README says they say."""

import importlib.util
import os
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_search_pipeline_has_three_jax_stages_and_an_end_to_end_run():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    pytest.importorskip("jax")
    from neural_cost.adapters import JaxAdapter

    example = load("search_pipeline")
    report = example.pipeline(example.build()).run(
        adapter=JaxAdapter(default_trip_count=8, cross_check=False), warmup=1, repeats=2
    )
    assert [s.name for s in report.stages] == ["tree", "env", "net"]
    assert all(s.error is None and s.report.estimate.coverage.fraction == 1.0 for s in report.stages)
    env_kinds = {op.kind for op in report.stages[1].report.estimate.operations}
    assert {"gather", "scatter", "elementwise"} <= env_kinds  # the environment step is gathers/scatters/selects
    assert report.stages[0].report.estimate.loop_assumptions[0].source == "default"
    assert report.unexplained_seconds is not None
    assert "unexplained:" in report.render()


def test_compare_frameworks_runs_for_every_installed_framework():
    example = load("compare_frameworks")
    text = example.main(
        [
            "--batches",
            "1,8",
            "--features",
            "64",
            "--warmup",
            "1",
            "--repeats",
            "2",
            "--peak-flops",
            "1e11",
            "--memory-bandwidth",
            "1e10",
        ]
    )
    for framework, (module, _) in example.FRAMEWORKS.items():
        if importlib.util.find_spec(module) is not None:
            row = next(line for line in text.splitlines() if line.startswith(framework) and "8×64→64" in line)
            # 2·8·64·64 = 65,536 FLOPs; bytes 4·(8·64 + 64·64 + 8·64) = 20,480 → 0.0 MB shown with one decimal
            assert "65,536" in row
