"""FrameworkAdapter: an operations-only subclass works; framework adapters load lazily."""

import subprocess
import sys
import textwrap

import pytest

from neural_cost import Operation, estimate_model
from neural_cost.adapters import FrameworkAdapter
from neural_cost.core import AdapterError, FrameworkNotInstalledError


class ListAdapter(FrameworkAdapter):
    """A custom framework: the model is a list of (m, k, n) matmuls."""

    def operations(self, model, inputs, **kwargs):
        return [Operation(f"mm{i}", "matmul", ((m, k), (k, n)), (m, n)) for i, (m, k, n) in enumerate(model)]


class Shaped:
    shape = (4, 8)


def test_operations_only_adapter_is_fully_modeled():
    trace = ListAdapter().trace([(4, 8, 16), (4, 16, 2)], (Shaped(),))
    assert trace.coverage.fraction == 1.0 and trace.coverage.total == 2 and trace.framework == "custom"
    assert trace.input_shapes == (("arg0", (4, 8)),)
    estimate = estimate_model([(4, 8, 16), (4, 16, 2)], (Shaped(),), ListAdapter())
    assert estimate.flops == 2 * 4 * 8 * 16 + 2 * 4 * 16 * 2  # 1,024 + 256 = 1,280


def test_operations_is_trace_operations():
    adapter = ListAdapter()
    assert tuple(adapter.operations([(1, 2, 3)], ())) == adapter.trace([(1, 2, 3)], ()).operations


def test_an_adapter_must_implement_one_of_them():
    with pytest.raises(NotImplementedError, match="must implement trace"):
        FrameworkAdapter().trace(None, ())
    with pytest.raises(NotImplementedError, match="must implement trace"):
        FrameworkAdapter().operations(None, ())


def test_operations_that_are_not_records_are_named():
    class Bad(FrameworkAdapter):
        def operations(self, model, inputs, **kwargs):
            return [("mm", 3)]

    with pytest.raises(AdapterError, match="item 0 is a tuple, not an Operation"):
        Bad().trace(None, ())


def test_benchmark_times_the_model_with_its_inputs():
    calls = []
    m = ListAdapter().benchmark(lambda x: calls.append(x), 7, warmup=1, repeats=2)
    assert calls == [7, 7, 7] and m.runs == 2


BLOCKED = textwrap.dedent(
    """
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"torch", "jax", "jaxlib", "tensorflow", "keras", "flax"}:
                raise ImportError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, Block())
    """
)


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_works_without_any_framework():
    result = run_python(
        BLOCKED
        + textwrap.dedent(
            """
            import neural_cost
            from neural_cost import Operation, estimate_operations, analyze_gap, HardwareSpec, Measurement
            e = estimate_operations([Operation("mm", "matmul", ((2, 3), (3, 4)), (2, 4))])
            r = analyze_gap(e, Measurement((1e-6,)), HardwareSpec("x", 1e12, 1e11))
            assert "Neural cost gap analysis" in r.render()
            try:
                from neural_cost.adapters import TorchAdapter
            except Exception as error:
                print(type(error).__name__, error)
            """
        )
    )
    assert result.returncode == 0, result.stderr
    assert "FrameworkNotInstalledError TorchAdapter needs torch" in result.stdout
    assert "pip install 'neural-cost[torch]'" in result.stdout


def test_importing_neural_cost_imports_no_framework():
    result = run_python(
        "import sys, neural_cost, neural_cost.adapters, neural_cost.cli.main\n"
        "print(sorted(m for m in ('torch', 'jax', 'tensorflow') if m in sys.modules))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("name", "extra"), [("JaxAdapter", "jax"), ("TensorFlowAdapter", "tensorflow")])
def test_missing_framework_names_the_extra(name, extra):
    result = run_python(BLOCKED + f"\nfrom neural_cost.adapters import {name}\n")
    assert result.returncode != 0
    assert f"pip install 'neural-cost[{extra}]'" in result.stderr


def test_unknown_adapter_name():
    import neural_cost.adapters as adapters

    with pytest.raises(AttributeError, match="no attribute 'MxnetAdapter'"):
        adapters.MxnetAdapter  # noqa: B018


def test_framework_error_is_an_import_error():
    assert issubclass(FrameworkNotInstalledError, ImportError)
