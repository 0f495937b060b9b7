"""A JAX program is compiled once: the executable that is timed is the one XLA's cross-check reads.

Compilations are counted through ``jax.monitoring``'s backend-compile events whose ``fun_name``
is the program's (``jit(forward)``). Each test defines its own function: JAX keeps compiled
programs per function object, so a function another test compiled would read as a cache hit.
"""

import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from neural_cost import AdapterError, HardwareSpec, analyze_workload  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.adapters._jax.compiled import CACHE_SIZE, compile_log, signature  # noqa: E402
from neural_cost.cli.main import main  # noqa: E402

SPEC = HardwareSpec("test", 1e11, 1e10)
ARGS = (jnp.ones((16, 8)), jnp.ones((4, 16)))  # w (16, 8), x (4, 16)
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _forward():
    def forward(w, x):
        return jnp.tanh(x @ w)

    return forward


def test_trace_alone_never_compiles():
    forward = _forward()
    with compile_log() as log:
        trace = JaxAdapter().trace(forward, ARGS)
    assert log.of("forward") == []
    assert trace.cross_check is None  # nothing compiled to read it from, and none compiled for it


def test_analyze_workload_compiles_once_and_keeps_the_cross_check():
    forward = _forward()
    with compile_log() as log:
        report = analyze_workload(JaxAdapter(), forward, ARGS, hardware=SPEC, warmup=1, repeats=2)
    assert len(log.of("forward")) == 1
    check = report.estimate.cross_check
    # read from the timed executable: XLA's matmul 2·4·16·8 = 1,024 FLOPs; tanh is 4·8 = 32 transcendentals
    assert (check["source"], check["flops"], check["transcendentals"]) == ("XLA cost_analysis", 1024.0, 32.0)
    assert "  cross-check: XLA cost_analysis reports 1.02 kFLOP, " in report.render()


def test_cross_check_on_request_compiles_in_trace_and_benchmark_times_that_executable():
    forward = _forward()
    adapter = JaxAdapter(cross_check=True)
    with compile_log() as log:
        trace = adapter.trace(forward, ARGS)
        measurement = adapter.benchmark(forward, *ARGS, warmup=1, repeats=2)
    assert len(log.of("forward")) == 1 and trace.cross_check["flops"] == 1024.0  # 2·4·16·8
    (kept,) = adapter.executables._entries
    assert measurement.compile_seconds == kept.compile_seconds  # the trace's compile, reported once


def test_cross_check_off_reads_nothing_even_after_timing():
    forward = _forward()
    adapter = JaxAdapter(cross_check=False)
    adapter.benchmark(forward, *ARGS, warmup=1, repeats=2)
    assert adapter.trace(forward, ARGS).cross_check is None


def test_a_program_of_other_shapes_is_not_the_one_compiled():
    forward = _forward()
    adapter = JaxAdapter()
    adapter.benchmark(forward, *ARGS, warmup=1, repeats=2)
    with compile_log() as log:
        trace = adapter.trace(forward, (jnp.ones((16, 8)), jnp.ones((2, 16))))  # batch 2, not 4
    assert log.of("forward") == [] and trace.cross_check is None
    assert adapter.trace(_forward(), ARGS).cross_check is None  # another function of the same shapes


def test_the_last_few_executables_are_kept():
    adapter = JaxAdapter()
    functions = [_forward() for _ in range(CACHE_SIZE + 1)]
    for forward in functions:
        adapter.benchmark(forward, *ARGS, warmup=1, repeats=1)
    assert adapter.trace(functions[0], ARGS).cross_check is None  # the oldest one was let go
    assert adapter.trace(functions[-1], ARGS).cross_check["flops"] == 1024.0


def test_a_calibration_keeps_every_program_it_goes_round_and_then_only_the_last_few():
    """A kernel calibration's passes go round hundreds of programs: inside ``keeping_compiled(n)``
    none of the first n is compiled again on its next pass; after it, the last ``CACHE_SIZE`` stay."""
    adapter = JaxAdapter()
    functions = [_forward() for _ in range(CACHE_SIZE + 2)]
    with adapter.keeping_compiled(len(functions)):
        for forward in functions:
            adapter.benchmark(forward, *ARGS, warmup=1, repeats=1)
        with compile_log() as log:
            for forward in functions:  # the second pass
                adapter.benchmark(forward, *ARGS, warmup=1, repeats=1)
        assert log.events == []
    assert adapter.trace(functions[1], ARGS).cross_check is None  # let go: not among the last CACHE_SIZE
    assert adapter.trace(functions[-CACHE_SIZE], ARGS).cross_check["flops"] == 1024.0


def test_signature_is_what_jit_specializes_on():
    x = jnp.ones((2, 3))
    assert signature((x, 1.0), {}, ()) == signature((jnp.zeros((2, 3)), 5.0), {}, ())  # values never matter
    assert signature((x,), {}, ()) != signature((x.astype(jnp.int32),), {}, ())
    assert signature((x, 3), {}, (1,)) != signature((x, 4), {}, (1,))  # a static argument's value does
    assert signature((x, [1]), {}, (1,)) is None  # unhashable: jit would refuse it as static too


def test_cross_check_takes_none_true_or_false():
    with pytest.raises(AdapterError, match="cross_check='yes'; pass None"):
        JaxAdapter(cross_check="yes")


def test_cli_analyze_compiles_the_bundled_mlp_once(capsys):
    target = f"{EXAMPLES / 'mlp.py'}:build"
    fast = ["--warmup", "1", "--repeats", "2", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
    with compile_log() as log:
        assert main(["analyze", target, *fast]) == 0
    assert len(log.of("forward")) == 1
    assert "  cross-check: XLA cost_analysis reports 4.30 GFLOP, " in capsys.readouterr().out
