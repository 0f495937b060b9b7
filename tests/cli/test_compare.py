"""`neural-cost compare`: one child process per JAX platform, one table; and the build helpers it rests on."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from neural_cost.adapters import adapter_for
from neural_cost.analysis.workload import analyze_workload
from neural_cost.cli.build import (
    call_build,
    check_spec,
    infer_framework,
    load_build,
    parse_spec,
)
from neural_cost.cli.compare import render_table
from neural_cost.cli.main import main
from neural_cost.core.errors import NeuralCostError

FAST = ["--warmup", "1", "--repeats", "2"]

JAX_SCRIPT = """
import jax.numpy as jnp

def layer(x, w):
    return jnp.tanh(x @ w)

def build():
    return layer, (jnp.ones((8, 16)), jnp.ones((16, 4)))
"""

FLAX_SCRIPT = """
from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp

@dataclass(frozen=True)
class Config:
    features: int = 4

class Head(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        return nn.relu(nn.Dense(self.features)(x))

def build():
    config = Config()
    model = Head(config.features)
    x = jnp.ones((2, 8))
    variables = model.init(jax.random.PRNGKey(0), x)
    return model.apply, (variables, x)
"""

RAISING_SCRIPT = """
def build():
    raise ValueError("no checkpoint at /nowhere")
"""


def write(tmp_path, text, name="bench.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def row(text, platform):
    return next(line for line in text.splitlines() if line.startswith(f"  {platform} "))


# -- the command, end to end (each platform is a child process) ------------------------------


def test_cpu_row_has_device_time_and_coverage_and_json(tmp_path, capsys):
    pytest.importorskip("jax")
    script = write(tmp_path, JAX_SCRIPT)
    out = tmp_path / "compare.json"
    assert main(["compare", f"{script}:build", "--platforms", "cpu", *FAST, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    header, cpu = text.splitlines()[1], row(text, "cpu")
    assert "device" in header and "coverage" in header and "FLOP/s" in header
    data = json.loads(out.read_text())
    (result,) = data["platforms"]
    assert data["schema"] == "neural-cost/compare" and result["status"] == "ok" and result["framework"] == "jax"
    report = result["report"]
    assert report["measurement"]["device_kind"] == "cpu" and report["measurement"]["runs"] == 2
    assert report["measurement"]["device"] in cpu and "100.0% · 100.0%" in cpu and "(2)" in cpu  # ops · work
    # 2·8·16·4 = 1024 matmul FLOPs + tanh over 8·4 = 32 elements
    assert report["estimate"]["flops"] == 2 * 8 * 16 * 4 + 8 * 4
    assert "FLOP/s" in cpu and "B/s" in cpu


def test_unavailable_platform_is_a_row_and_the_others_still_count(tmp_path, capsys):
    pytest.importorskip("jax")
    script = write(tmp_path, JAX_SCRIPT)
    assert main(["compare", f"{script}:build", "--platforms", "cpu,tpu", *FAST]) == 0
    text = capsys.readouterr().out
    assert "100.0%" in row(text, "cpu")
    assert "unavailable: platform 'tpu' is not available" in row(text, "tpu")


def test_a_script_defining_a_dataclass_and_a_flax_module_works(tmp_path, capsys):
    pytest.importorskip("flax")
    script = write(tmp_path, FLAX_SCRIPT)
    out = tmp_path / "flax.json"
    assert main(["compare", f"{script}:build", "--platforms", "cpu", *FAST, "--json", str(out)]) == 0
    assert "100.0%" in row(capsys.readouterr().out, "cpu")
    (result,) = json.loads(out.read_text())["platforms"]
    assert result["status"] == "ok", result["error"]
    # Dense 8 → 4 at batch 2: 2·2·8·4 = 128 matmul FLOPs, bias 2·4 = 8, relu 2·4 = 8
    assert result["report"]["estimate"]["flops"] == 2 * 2 * 8 * 4 + 8 + 8


def test_a_build_that_raises_is_a_clear_row_and_fails_when_alone(tmp_path, capsys):
    script = write(tmp_path, RAISING_SCRIPT)
    assert main(["compare", f"{script}:build", "--platforms", "cpu", *FAST]) == 1
    cpu = row(capsys.readouterr().out, "cpu")
    assert "failed: build() in bench.py raised ValueError: no checkpoint at /nowhere" in cpu


def test_a_child_that_dies_or_hangs_is_a_row(tmp_path, capsys):
    # os._exit is intercepted in the child (cli/exits.py); an exit from C code is not, and the
    # parent names what it saw. Was (issue 12 item 7): "failed: the child exited with code 3: OOM".
    dies = "import ctypes, sys\n\ndef build():\n    print('OOM', file=sys.stderr)\n    ctypes.CDLL(None)._exit(3)\n"
    assert main(["compare", f"{write(tmp_path, dies)}:build", "--platforms", "cpu", *FAST]) == 1
    assert row(capsys.readouterr().out, "cpu").split(None, 1)[1] == (
        "failed: the child process exited with code 3 without a report (during build() or the analysis): OOM"
    )
    exits = write(tmp_path, "import os\n\ndef build():\n    os._exit(3)\n", name="exits.py")
    assert main(["compare", f"{exits}:build", "--platforms", "cpu", *FAST]) == 1
    assert row(capsys.readouterr().out, "cpu").split(None, 1)[1] == (
        "failed: build() called os._exit(3), which would end the process without a report; return "
        "(fn_or_model, args) or (fn_or_model, args, kwargs) from build() in exits.py instead"
    )
    hangs = write(tmp_path, "import time\n\ndef build():\n    time.sleep(60)\n", name="hangs.py")
    assert main(["compare", f"{hangs}:build", "--platforms", "cpu", "--timeout", "4", *FAST]) == 1
    assert "timeout: timed out after 4 s" in row(capsys.readouterr().out, "cpu")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{tmp}/missing.py:build", "missing.py does not exist"),
        ("{tmp}/bench.py", "is not FILE.py:build"),
        ("{tmp}/bench.py:", "is not FILE.py:build"),
        ("{tmp}/bench.py:buidl", "bench.py defines no 'buidl'"),
        ("{tmp}:build", "is a directory"),
    ],
)
def test_a_bad_spec_is_one_stderr_line_and_exit_2(tmp_path, capsys, spec, message):
    write(tmp_path, JAX_SCRIPT)
    assert main(["compare", spec.format(tmp=tmp_path), "--platforms", "cpu"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("neural-cost: error: ")
    assert message in captured.err


def test_the_console_script_prints_no_traceback_for_a_missing_file(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "neural_cost.cli.main", "compare", str(tmp_path / "nope.py:build")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("neural-cost: error: ") and done.stderr.count("\n") == 1


def test_table_of_failures_only_still_prints_its_header():
    text = render_table("x.py:build", [{"platform": "tpu", "status": "unavailable", "error": "no TPU here"}])
    assert text.splitlines()[0] == "neural-cost compare: x.py:build"
    assert text.splitlines()[2] == "  tpu       unavailable: no TPU here"


# -- load_build / call_build ------------------------------------------------------------------


def test_load_build_registers_the_script_before_running_it(tmp_path):
    script = write(
        tmp_path,
        """
        import sys
        from dataclasses import dataclass

        @dataclass
        class Shape:
            rows: int

        REGISTERED = __name__ in sys.modules

        def build():
            return len, ([Shape(3)],)
        """,
    )
    build = load_build(f"{script}:build")
    module = sys.modules[build.__module__]
    assert module.REGISTERED and module.__file__ == str(script.resolve())
    assert load_build(f"{script}:build").__module__ != build.__module__  # each load is its own module
    assert call_build(build) == (len, ([module.Shape(3)],), {})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("build = 3\n", "build is a int, not a function"),
        ("x = 1\n", "defines no 'build'"),
        ("raise ImportError('no module named jax_mps')\ndef build(): pass\n", "loading bench.py raised ImportError"),
    ],
)
def test_load_build_errors_name_the_problem(tmp_path, body, message):
    script = write(tmp_path, body)
    with pytest.raises(NeuralCostError, match=message):
        load_build(f"{script}:build")


def test_parse_and_check_spec(tmp_path):
    script = write(tmp_path, "from helpers import *\n")
    assert parse_spec(f"{script}:make") == (script.resolve(), "make")
    assert check_spec(f"{script}:make") == (script.resolve(), "make")  # a star import may define it
    broken = write(tmp_path, "def build(:\n", name="broken.py")
    with pytest.raises(NeuralCostError, match=r"cannot read broken\.py as Python"):
        check_spec(f"{broken}:build")
    with pytest.raises(NeuralCostError, match=r"is not FILE\.py:build"):
        parse_spec(f"{script}:not-a-name")


def test_call_build_accepts_two_or_three_items_and_names_what_is_wrong():
    def pair():
        return abs, [1]

    def triple():
        return abs, (1,), {"k": 2}

    def bad_shape():
        return abs

    def bad_args():
        return abs, 1

    def not_callable():
        return 3, ()

    def raises():
        raise KeyError("weights")

    assert call_build(pair) == (abs, (1,), {})
    assert call_build(triple) == (abs, (1,), {"k": 2})
    with pytest.raises(NeuralCostError, match=r"bad_shape\(\) in test_compare.py returned builtin_function_or_method"):
        call_build(bad_shape)
    with pytest.raises(NeuralCostError, match=r"args of type int; args is a tuple"):
        call_build(bad_args)
    with pytest.raises(NeuralCostError, match="returned int as fn_or_model, not callable"):
        call_build(not_callable)
    with pytest.raises(NeuralCostError, match=r"raises\(\) in test_compare.py raised KeyError: 'weights'"):
        call_build(raises)


# -- infer_framework --------------------------------------------------------------------------


def fake(module, name="Thing"):
    """An instance of a class that claims to live in ``module``: types are told by module name."""
    return type(name, (), {"__module__": module})()


def test_infer_framework_from_the_model_type_first():
    assert infer_framework(fake("torch.nn.modules.linear", "Linear"), (np.ones(2),)) == "torch"
    assert infer_framework(fake("keras.src.models.sequential"), ()) == "tensorflow"
    assert infer_framework(fake("tensorflow.python.module.module"), ()) == "tensorflow"
    assert infer_framework(fake("flax.linen.module", "Dense"), ()) == "jax"
    # a model's type decides even when its arguments are another framework's
    assert infer_framework(fake("torch.nn"), (fake("jaxlib._jax", "ArrayImpl"),)) == "torch"


def test_a_keras_model_is_the_program_of_its_backend(monkeypatch):
    """Keras 3 runs a model on its backend: under ``KERAS_BACKEND=jax`` a Sequential is a JAX
    program (it was told to be TensorFlow's, and failed there: "Cannot convert a symbolic
    tf.Tensor to a numpy array"); a backend that names no framework of ours stays TensorFlow."""
    import types

    said = {"backend": "jax"}
    keras = types.SimpleNamespace(backend=types.SimpleNamespace(backend=lambda: said["backend"]))
    monkeypatch.setitem(sys.modules, "keras", keras)
    model = fake("keras.src.models.sequential", "Sequential")
    assert infer_framework(model, (np.ones(2),)) == "jax"
    said["backend"] = "torch"
    assert infer_framework(model, ()) == "torch"
    said["backend"] = "numpy"
    assert infer_framework(model, ()) == "tensorflow"


def test_keras_on_jax_from_the_command_line(tmp_path, capsys):
    """The user's file sets ``KERAS_BACKEND=jax`` before importing Keras (as Keras' guide does);
    run in a fresh process so that this one's Keras (TensorFlow's) is not the one loaded. The model runs as Keras
    runs it (``_jax/keras_model.py``): its variables are arguments, parameters of the program (the kernel, 8 × 4,
    and the bias, 4: 144 bytes), not constants XLA folds (the zero bias's add would match no kernel), and the input
    is named as the user passed it."""
    script = tmp_path / "keras_jax.py"
    script.write_text(
        "import os\nos.environ['KERAS_BACKEND'] = 'jax'\nimport keras\nimport numpy as np\n\n"
        "def build():\n    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])\n"
        "    return model, (np.ones((2, 8), 'float32'),)\n"
    )
    command = ["analyze", f"{script}:build", *FAST, "--json", str(tmp_path / "r.json")]
    found = subprocess.run(
        [sys.executable, "-m", "neural_cost.cli.main", *command],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=600,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr[-2000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["estimate"]["framework"] == "jax"
    assert report["estimate"]["flops"] == 2 * 2 * 8 * 4 + 2 * 4  # (2, 8) @ (8, 4): 2·M·K·N, the bias: M·N
    estimate = report["estimate"]
    assert estimate["input_shapes"] == [["arg0", [2, 8]]]
    parameters = [spec for spec in estimate["boundary"] if spec["role"] == "parameter"]
    assert sorted(tuple(spec["shape"]) for spec in parameters) == [(4,), (8, 4)]
    assert not any("match no kernel" in note for note in estimate["notes"])


def test_infer_framework_from_array_leaves():
    jax_array = fake("jaxlib._jax", "ArrayImpl")
    assert infer_framework(abs, ({"w": [jax_array]}, np.ones(3))) == "jax"
    assert infer_framework(abs, (), {"x": fake("torch", "Tensor")}) == "torch"
    assert infer_framework(abs, (fake("tensorflow.python.framework.ops", "EagerTensor"),)) == "tensorflow"
    with pytest.raises(NeuralCostError, match="no JAX, PyTorch or TensorFlow arrays"):
        infer_framework(abs, (np.ones(3), [1.0]))
    with pytest.raises(NeuralCostError, match=r"mix jax \(jaxlib._jax.ArrayImpl\), torch \(torch.Tensor\)"):
        infer_framework(abs, (jax_array, fake("torch", "Tensor")))


def test_infer_framework_with_real_frameworks():
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    flax_linen = pytest.importorskip("flax.linen")
    assert infer_framework(torch.nn.Linear(2, 2), (torch.ones(1, 2),)) == "torch"
    assert infer_framework(lambda x: x, (jax.numpy.ones(2),)) == "jax"
    assert infer_framework(jax.jit(lambda x: x), (np.ones(2),)) == "jax"
    assert infer_framework(flax_linen.Dense(2).apply, ({"params": {}}, np.ones(2))) == "jax"


def test_infer_framework_imports_no_framework():
    code = (
        "import sys, numpy as np\n"
        "from neural_cost.cli.build import infer_framework\n"
        "class T: pass\n"
        "T.__module__ = 'torch'\n"
        "assert infer_framework(abs, (T(), np.ones(2))) == 'torch'\n"
        "loaded = [m for m in ('torch', 'jax', 'tensorflow', 'flax', 'keras') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- analyze_workload, in this process --------------------------------------------------------


def test_analyze_workload_jax_and_torch():
    jnp = pytest.importorskip("jax.numpy")
    torch = pytest.importorskip("torch")
    jax_adapter = adapter_for("jax")
    report = analyze_workload(
        jax_adapter, lambda a, b: a @ b, (jnp.ones((4, 8)), jnp.ones((8, 2))), {}, None, warmup=1, repeats=2
    )
    assert report.estimate.flops == 2 * 4 * 8 * 2 and report.measurement.runs == 2  # 2·4·8·2 = 128
    assert report.hardware.kind == "cpu" and not report.device_mismatch
    layer = torch.nn.Linear(8, 2, bias=False)
    report = analyze_workload(adapter_for("torch"), layer, (torch.ones(4, 8),), None, warmup=1, repeats=2)
    assert report.estimate.flops == 2 * 4 * 8 * 2 and report.estimate.coverage.fraction == 1.0
    assert report.hardware.kind == "cpu" and report.measurement.device_kind == "cpu"


def test_adapter_for_names_the_known_frameworks_and_options():
    with pytest.raises(NeuralCostError, match="framework='mxnet' is not one of jax, torch, tensorflow"):
        adapter_for("mxnet")
    pytest.importorskip("torch")
    with pytest.raises(NeuralCostError, match="PyTorch runs its loops for real"):
        adapter_for("torch", trip_counts={0: 3})
    with pytest.raises(NeuralCostError, match="TorchAdapter does not take 'cross_check'"):
        adapter_for("torch", cross_check=False)


def test_analyze_workload_asks_for_apply_on_an_unbound_flax_module():
    nn = pytest.importorskip("flax.linen")
    with pytest.raises(NeuralCostError, match=r"return \(model.apply, \(variables, \*inputs\)\)"):
        analyze_workload(adapter_for("jax"), nn.Dense(2), (np.ones((1, 2)),), None, warmup=1, repeats=2)
