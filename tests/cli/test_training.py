"""Training steps analyzed from the CLI: `neural-cost analyze examples/train_*.py:build`.

Each example is a two-layer MLP, batch 32, 64 → 128 → 10, so the three frameworks run the same
matmuls (float32):
  forward:   x·W1  2·32·64·128 = 524,288    h·W2  2·32·128·10 = 81,920
  backward:  dW2 = hᵀ·dlogits  2·128·32·10 = 81,920    dh = dlogits·W2ᵀ  2·32·10·128 = 81,920
             dW1 = xᵀ·dh       2·64·32·128 = 524,288   (no dx: the input needs no gradient)
and the user's model, parameters and optimizer are as they were afterwards.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from neural_cost.cli import analyze
from neural_cost.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FAST = ["--warmup", "1", "--repeats", "2", "--peak-flops", "1e11", "--memory-bandwidth", "1e10"]
FORWARD_MATMULS = [81_920, 524_288]
BACKWARD_MATMULS = [81_920, 81_920, 524_288]
PARAMETERS = 64 * 128 + 128 + 128 * 10 + 10  # 9,610


def analyze_example(name, tmp_path, monkeypatch, on_build=lambda workload: None):
    """Run the CLI on examples/NAME.py:build; return the JSON report and what build() returned
    (kept by wrapping the CLI's own loader, so the test sees the very objects analyzed;
    ``on_build`` sees them before any analysis)."""
    built = []
    load_build = analyze.load_build

    def keeping(spec):
        build = load_build(spec)

        def wrapped():
            workload = build()
            on_build(workload)
            built.append(workload)
            return workload

        return wrapped

    monkeypatch.setattr(analyze, "load_build", keeping)
    out = tmp_path / "report.json"
    assert main(["analyze", f"{EXAMPLES / name}.py:build", *FAST, "--json", str(out)]) == 0
    return json.loads(out.read_text()), built[0]


def matmuls(report, where=lambda op: True):
    ops = [row["operation"] | {"flops": row["flops"]} for row in report["estimate"]["by_operation"]]
    return sorted(op["flops"] for op in ops if op["kind"] == "matmul" and where(op))


def test_torch_training_step_from_the_cli(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    before = {}

    def snapshot(workload):  # the model's values as build() made them
        before.update({k: v.clone() for k, v in workload["model"].state_dict().items()})

    report, workload = analyze_example("train_torch", tmp_path, monkeypatch, snapshot)
    scopes = {row["scope"]: row for row in report["estimate"]["by_scope"]}
    assert list(scopes) == ["forward", "backward", "optimizer"]
    assert matmuls(report, lambda op: op["scope"] == "forward") == FORWARD_MATMULS
    assert matmuls(report, lambda op: op["scope"] == "backward") == BACKWARD_MATMULS
    # SGD with momentum, a steady-state step (the one the timed runs repeat; the first step only
    # copies the gradient into the buffer): buf = μ·buf + g (2), p += -lr·buf (2) per element
    assert scopes["optimizer"]["flops"] == 4 * PARAMETERS  # 38,440
    model, optimizer = workload["model"], workload["optimizer"]
    after = model.state_dict()
    assert before and all(torch.equal(after[k], v) for k, v in before.items())
    assert all(p.grad is None for p in model.parameters())
    assert len(optimizer.state) == 0  # no momentum buffer left behind by the timed steps


def test_jax_optax_training_step_from_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    pytest.importorskip("optax")
    import numpy as np

    before = {}

    def snapshot(workload):
        before.update({k: np.array(v) for k, v in workload[1][0].items()})

    report, (step, (params, opt_state, batch)) = analyze_example("train_jax", tmp_path, monkeypatch, snapshot)
    # 2 forward matmuls and the 3 jax.grad adds: the step's gradient equations are counted
    assert matmuls(report) == sorted(FORWARD_MATMULS + BACKWARD_MATMULS)
    # the update on top of the gradients: optax.sgd(0.1, momentum=0.9) — trace = g + 0.9·trace
    # (2 FLOPs per element), update = -0.1·trace (1), apply_updates p + u (1): 4 per parameter
    import jax

    from neural_cost.adapters import JaxAdapter
    from neural_cost.costs.estimate import estimate_trace

    loss_fn = sys.modules[step.__module__].loss_fn  # the example as the CLI loaded it
    grads_only = JaxAdapter(cross_check=False).trace(lambda p, b: jax.value_and_grad(loss_fn)(p, *b), (params, batch))
    assert report["estimate"]["flops"] - estimate_trace(grads_only).flops == 4 * PARAMETERS  # 38,440
    assert before and all(np.array_equal(np.asarray(params[k]), v) for k, v in before.items())  # nothing donated
    stepped, _, _ = step(params, opt_state, batch)  # and the step does update them: the check can fail
    assert not np.array_equal(np.asarray(stepped["w1"]), before["w1"])


def test_keras_training_step_from_the_cli(tmp_path, monkeypatch):
    pytest.importorskip("tensorflow")
    pytest.importorskip("keras")
    import numpy as np

    saved = {}

    def snapshot(workload):  # every variable the step uses, as build() made them
        step, args = workload
        variables = step.get_concrete_function(*args).variables
        saved.update({id(v): (v, v.numpy().copy()) for v in variables})

    report, _ = analyze_example("train_keras", tmp_path, monkeypatch, snapshot)
    assert matmuls(report) == sorted(FORWARD_MATMULS + BACKWARD_MATMULS)
    scopes = [row["operation"]["scope"] or "" for row in report["estimate"]["by_operation"]]
    assert any("gradient_tape" in scope for scope in scopes) and any("sgd" in scope for scope in scopes)
    # the weights, the momentum slots and the optimizer's step counter, as before the timed steps
    assert len(saved) == 10  # 2 kernels, 2 biases, 4 momentum slots, learning rate, iterations
    assert all(np.array_equal(v.numpy(), value) for v, value in saved.values())


def script(tmp_path, text):
    path = tmp_path / "work.py"
    path.write_text(text)
    return f"{path}:build"


def test_dict_form_errors_name_the_problem(tmp_path, capsys):
    pytest.importorskip("torch")
    head = "import torch\nmodel = torch.nn.Linear(4, 2)\nx = torch.ones(3, 4)\n"
    cases = {
        "def build():\n    return {'model': model, 'args': (x,), 'epochs': 3}\n": "key(s) 'epochs'",
        "def build():\n    return {'args': (x,)}\n": "a dict without 'model'",
        "def build():\n    return {'model': model, 'args': (x,), 'training': 1}\n": "'training': 1",
        "def build():\n    return {'model': model, 'args': (x,), 'loss_fn': len}\n": "without 'training': True",
    }
    for body, message in cases.items():
        assert main(["analyze", script(tmp_path, head + body), *FAST]) == 2
        assert message in capsys.readouterr().err


def test_training_dict_for_jax_says_a_jax_step_is_a_function(tmp_path, capsys):
    pytest.importorskip("jax")
    body = (
        "import jax.numpy as jnp\n\n"
        "def build():\n    return {'model': jnp.tanh, 'args': (jnp.ones(3),), 'training': True}\n"
    )
    assert main(["analyze", script(tmp_path, body), *FAST]) == 2
    assert "a JAX training step is a function: return (train_step, args)" in capsys.readouterr().err


def test_compare_refuses_a_training_step():
    from neural_cost.cli.build import call_build
    from neural_cost.core.errors import NeuralCostError

    def build():
        return {"model": abs, "args": (1,), "training": True}

    with pytest.raises(NeuralCostError, match="neural-cost compare times inference"):
        call_build(build)


def test_a_torch_function_calling_backward_is_told_the_training_form(tmp_path, capsys):
    pytest.importorskip("torch")
    body = (
        "import torch\nmodel = torch.nn.Linear(4, 2)\n\n"
        "def step(x):\n    loss = model(x).sum()\n    loss.backward()\n    return loss\n\n"
        "def build():\n    return step, (torch.ones(3, 4),)\n"
    )
    assert main(["analyze", script(tmp_path, body), *FAST]) != 0
    err = capsys.readouterr().err
    assert "does not require grad" in err and "'training': True" in err


def test_torch_benchmark_of_a_training_step_puts_everything_back():
    # The API under the CLI: timed training steps with Adam and batch norm, on a model whose
    # parameters already hold gradients and whose optimizer already stepped once.
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import TorchAdapter

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    model(x).sum().backward()
    optimizer.step()  # Adam state exists: step count 1, moments
    grads = [p.grad for p in model.parameters()]
    values = {k: v.clone() for k, v in model.state_dict().items()}
    steps = [state["step"].clone() for state in optimizer.state.values()]
    measured = TorchAdapter().benchmark(
        model, x, warmup=1, repeats=3, training=True, loss_fn=lambda out: out.square().mean(), optimizer=optimizer
    )
    assert measured.runs == 3
    assert all(torch.equal(model.state_dict()[k], v) for k, v in values.items())  # incl. BN running stats
    assert all(p.grad is g for p, g in zip(model.parameters(), grads, strict=True))  # the very tensors
    assert [state["step"] for state in optimizer.state.values()] == steps  # 1 step, not 1 + 4
