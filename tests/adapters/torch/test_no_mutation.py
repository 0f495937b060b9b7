"""Nothing the user can observe changes: trace, benchmark, profile_model and a training step.

Each model below changes one kind of state in its forward (issue 12, item 1); each runner must
leave every parameter, buffer, gradient, optimizer/scheduler state, RNG state and attribute as
it was: the same objects, bit-identical values, dtypes and requires_grad, and no inference
tensor. What cannot be restored is listed in ``adapters/_torch/preserve.py``.
"""

import types

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from neural_cost import AdapterError, MeasurementError, profile_model  # noqa: E402
from neural_cost.adapters import TorchAdapter  # noqa: E402

ADAPTER = TorchAdapter()


class Reassign(nn.Module):
    """``self.steps = self.steps + 1`` replaces the registered buffer's object."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps = self.steps + 1
        return self.lin(x)


class AddInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("acc", torch.zeros(()))

    def forward(self, x):
        self.acc.add_(1)
        return self.lin(x)


class Clamp(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.weight.mul_(10)  # so that the clamp really changes values

    def forward(self, x):
        with torch.no_grad():
            self.lin.weight.clamp_(-0.1, 0.1)
        return self.lin(x)


class Flag(nn.Module):
    """Sets flags and plain attributes, adds one, appends to a list, writes an unregistered tensor."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.seen = False
        self.history = []
        self.cache = torch.zeros(4)

    def forward(self, x):
        self.seen = True
        self.training = True
        self.lin.training = True
        self.added = "new"
        self.history.append(1)
        self.cache.add_(1)
        return self.lin(x)


class Raises(nn.Module):
    """Every change above, then an error."""

    def __init__(self):
        super().__init__()
        self.inner = Clamp()
        self.register_buffer("steps", torch.zeros(()))
        self.register_buffer("acc", torch.zeros(()))
        self.seen = False

    def forward(self, x):
        self.steps = self.steps + 1
        self.acc.add_(1)
        self.seen = True
        self.training = True
        self.inner(x)
        raise RuntimeError("after every change")


MODELS = [Reassign, AddInPlace, Clamp, Flag]


def state_of(model, optimizer=None, scheduler=None):
    """Everything observable: each tensor's object, value, dtype and requires_grad, grads,
    each submodule's attributes, the optimizer's and scheduler's state, the RNG state."""
    tensors = {}
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        grad = t.grad
        tensors[name] = (t, t.detach().clone(), t.dtype, t.requires_grad, grad, None if grad is None else grad.clone())
    attributes = {
        name: {
            k: (v, v.clone() if isinstance(v, torch.Tensor) else list(v) if isinstance(v, list) else v)
            for k, v in vars(m).items()
            if not k.startswith("_")
        }
        for name, m in model.named_modules()
    }
    snapshot = {"tensors": tensors, "attributes": attributes, "rng": torch.get_rng_state()}
    if optimizer is not None:
        snapshot["optimizer"] = (dict(vars(optimizer)), _clone(optimizer.state_dict()))
    if scheduler is not None:
        snapshot["scheduler"] = (dict(vars(scheduler)), _clone(scheduler.state_dict()))
    return snapshot


def _clone(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    return value


def _equal(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def assert_unchanged(before, model, optimizer=None, scheduler=None):
    now = dict(model.named_parameters()) | dict(model.named_buffers())
    assert now.keys() == before["tensors"].keys()
    for name, (obj, value, dtype, requires_grad, grad, grad_value) in before["tensors"].items():
        tensor = now[name]
        assert tensor is obj, f"{name}: a different object"
        assert torch.equal(tensor, value) and tensor.dtype == dtype and tensor.requires_grad == requires_grad, name
        assert not tensor.is_inference(), f"{name} is an inference tensor"
        assert tensor.grad is grad and (grad is None or torch.equal(grad, grad_value)), f"{name}.grad"
    for name, module in model.named_modules():
        attributes = {k: v for k, v in vars(module).items() if not k.startswith("_")}
        expected = before["attributes"][name]
        assert attributes.keys() == expected.keys(), name
        for key, (obj, value) in expected.items():
            assert attributes[key] is obj and _equal(value, list(obj) if isinstance(obj, list) else obj), (
                f"{name}.{key}"
            )
    assert torch.equal(torch.get_rng_state(), before["rng"])
    for key, holder in (("optimizer", optimizer), ("scheduler", scheduler)):
        if holder is not None:
            attributes, state = before[key]
            assert vars(holder).keys() == attributes.keys(), sorted(vars(holder).keys() ^ attributes.keys())
            assert all(vars(holder)[k] is v for k, v in attributes.items() if k not in ("state", "param_groups"))
            assert _equal(holder.state_dict(), state)


X = torch.randn(3, 4)
RUNNERS = {
    "trace": lambda m: ADAPTER.trace(m, (X,)),
    "benchmark": lambda m: ADAPTER.benchmark(m, X, warmup=2, repeats=3),
    "profile_model": lambda m: profile_model(m, (X,), ADAPTER),
    "trace(training=True)": lambda m: ADAPTER.trace(
        m, (X,), training=True, optimizer=torch.optim.SGD(m.parameters(), lr=0.1)
    ),
}


@pytest.mark.parametrize("runner", list(RUNNERS))
@pytest.mark.parametrize("make", MODELS, ids=[m.__name__ for m in MODELS])
def test_every_runner_leaves_every_model_as_it_was(make, runner):
    # before the fix: Reassign's steps 1 (trace) or 23 and an inference tensor (benchmark),
    # AddInPlace's acc 5 and Clamp's weight clamped (benchmark), Flag.training True (benchmark)
    # and .seen/.added/.history/.cache changed (every runner)
    torch.manual_seed(0)
    model = make().eval()
    before = state_of(model)
    RUNNERS[runner](model)
    assert_unchanged(before, model)


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_a_forward_that_raises_changes_nothing(runner):
    model = Raises().eval()
    before = state_of(model)
    expected = MeasurementError if runner == "benchmark" else AdapterError
    with pytest.raises(expected, match="after every change"):
        RUNNERS[runner](model)
    assert_unchanged(before, model)


def test_the_issues_reproducer_benchmark_then_trace():
    # warmup=3, repeats=20 left steps at 23 and an inference tensor, and the
    # next trace failed: "Inplace update to inference tensor outside InferenceMode is not allowed"
    model = Reassign().eval()
    buffer = model.steps
    first = ADAPTER.trace(model, (X,))
    ADAPTER.benchmark(model, X, warmup=3, repeats=20)
    assert model.steps is buffer and float(buffer) == 0.0 and not buffer.is_inference()
    second = ADAPTER.trace(model, (X,))
    assert [(op.name, op.cost) for op in second.operations] == [(op.name, op.cost) for op in first.operations]
    assert first.coverage.total == second.coverage.total


@pytest.mark.parametrize("make_optimizer", [torch.optim.SGD, torch.optim.Adam], ids=["SGD", "Adam"])
def test_an_attached_lr_scheduler_and_its_optimizer_are_left_as_they_were(make_optimizer):
    # the scheduler wraps optimizer.step, which set optimizer._opt_called = True during the trace
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    optimizer = make_optimizer(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    assert not hasattr(optimizer, "_opt_called")
    before = state_of(model, optimizer, scheduler)
    ADAPTER.trace(model, (X,), training=True, optimizer=optimizer)
    assert not hasattr(optimizer, "_opt_called")
    assert_unchanged(before, model, optimizer, scheduler)
    # after one real step (Adam state exists, _opt_called set by the user's own step)
    model(X).sum().backward()
    optimizer.step()
    scheduler.step()
    before = state_of(model, optimizer, scheduler)
    for runner in RUNNERS.values():
        runner(model)
    ADAPTER.trace(model, (X,), training=True, optimizer=optimizer)
    assert_unchanged(before, model, optimizer, scheduler)
    assert optimizer.param_groups[0]["lr"] == 0.05  # 0.1 · 0.5 after the user's one scheduler step


@pytest.mark.parametrize("runner", ["trace", "benchmark", "profile_model"])
def test_inputs_written_in_place_are_put_back_and_named_in_a_note(runner):
    def model(x, scale=None):
        x.mul_(2)
        return x + scale

    x, scale = torch.ones(2), torch.ones(2)
    if runner == "trace":
        notes = ADAPTER.trace(model, (x,), {"scale": scale}).notes
    elif runner == "profile_model":
        notes = profile_model(model, (x,), ADAPTER, kwargs={"scale": scale}).estimate.notes
    else:
        ADAPTER.benchmark(model, x, warmup=1, repeats=2, kwargs={"scale": scale})
        notes = None  # a Measurement carries no notes: the input is put back all the same
    assert torch.equal(x, torch.ones(2)) and torch.equal(scale, torch.ones(2))
    if notes is not None:
        assert "the model wrote in place into its input arg0: the values were put back afterwards" in notes


def test_a_tensor_nested_inside_an_attribute_is_a_documented_limit():
    # preserve.py: tensors reached other than through modules and inputs are not restored
    class Nested(nn.Module):
        def __init__(self):
            super().__init__()
            self.box = types.SimpleNamespace(t=torch.zeros(2))

        def forward(self, x):
            self.box.t.add_(1)
            return x * 2

    model = Nested()
    ADAPTER.trace(model, (torch.ones(2),))
    assert torch.equal(model.box.t, torch.ones(2))  # kept: the documented limit


def test_analyze_on_a_buffer_reassigning_model_exits_0(tmp_path, capsys):
    # it exited 2: benchmark left the buffer an inference tensor, and the trace after it failed
    from neural_cost.cli.main import main

    script = tmp_path / "reassign.py"
    script.write_text(
        "import torch\n"
        "class Reassign(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = torch.nn.Linear(4, 4)\n"
        "        self.register_buffer('steps', torch.zeros(()))\n"
        "    def forward(self, x):\n"
        "        self.steps = self.steps + 1\n"
        "        return self.lin(x)\n"
        "def build():\n"
        "    return Reassign().eval(), (torch.randn(3, 4),)\n"
    )
    assert main(["analyze", f"{script}:build", "--framework", "torch", "--warmup", "3", "--repeats", "20"]) == 0
    assert "matmul" in capsys.readouterr().out


def test_trace_under_an_outer_inference_mode_with_inference_inputs():
    # Inputs made inside inference_mode are inference tensors: they carry no version counter,
    # which the input-write check must not ask for. 2·4·8·3 = 192 matmul FLOPs.
    model = torch.nn.Linear(8, 3, bias=False)
    with torch.inference_mode():
        x = torch.ones(4, 8)
        trace = TorchAdapter().trace(model, (x,))
    assert sum(op.cost.flops * op.count for op in trace.operations if op.kind in ("matmul", "linear")) == 192


# --- tensors that share a storage (views) --------------------------------------------------------
# The guard keyed protected tensors by storage, one tensor per storage: the last view registered
# won, so a write into another view saved and restored the wrong one (and named it in the note).


class FlatParameters(nn.Module):
    """Two parameters that are views of one flat buffer (flat-parameter optimizers, FSDP);
    the forward clamps the first in place."""

    def __init__(self):
        super().__init__()
        flat = torch.arange(24.0) - 12.0
        self.w1 = nn.Parameter(flat[:16].view(4, 4))
        self.w2 = nn.Parameter(flat[16:].view(4, 2))

    def forward(self, x):
        with torch.no_grad():
            self.w1.clamp_(-0.1, 0.1)
        return x @ self.w1 @ self.w2


def _views_of_one_input(runner, model, args):
    if runner == "trace":
        return ADAPTER.trace(model, args).notes
    if runner == "profile_model":
        return profile_model(model, args, ADAPTER).estimate.notes
    ADAPTER.benchmark(model, *args, warmup=2, repeats=3)
    return None  # a Measurement carries no notes


@pytest.mark.parametrize("runner", ["trace", "benchmark", "profile_model"])
def test_views_of_one_input_are_put_back_and_the_written_one_is_named(runner):
    # before: after trace q was still ×2 and the note named arg2 ("put back") and arg0, arg1
    # ("kept"); after benchmark (1 probe + 2 warmup + 3 timed runs) q was ×2⁶ = 64
    qkv = torch.randn(3, 4, 8)
    original = qkv.clone()
    q, k, v = qkv.unbind(0)

    def attention(q, k, v):
        q.mul_(2.0)  # an in-place update of one input, as a RoPE might do
        return q @ k.transpose(0, 1) @ v

    notes = _views_of_one_input(runner, attention, (q, k, v))
    assert torch.equal(qkv, original)  # q, k and v bit-identical
    if notes is not None:
        assert [note for note in notes if "its input" in note] == [
            "the model wrote in place into its input arg0: the values were put back afterwards"
        ]


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_parameters_that_are_views_of_one_buffer_are_put_back(runner):
    # before: w2 (registered last) was saved and put back instead of w1: w1 stayed clamped
    torch.manual_seed(0)
    model = FlatParameters()
    before = state_of(model)
    flat = model.w1.detach().clone(), model.w2.detach().clone()
    RUNNERS[runner](model)
    assert_unchanged(before, model)
    assert torch.equal(model.w1, flat[0]) and torch.equal(model.w2, flat[1])


@pytest.mark.parametrize("runner", ["trace", "benchmark", "profile_model"])
def test_an_input_that_is_a_view_of_a_parameter(runner):
    # x is row 0 of the weight; the forward clamps the weight. before: x (registered after the
    # parameters) was saved instead of the weight, so rows 1-3 stayed clamped
    model = Clamp()
    weight = model.lin.weight.detach().clone()
    x = model.lin.weight.detach()[0]  # shares the weight's storage
    notes = _views_of_one_input(runner, model, (x,))
    assert torch.equal(model.lin.weight, weight) and torch.equal(x, weight[0])
    if notes is not None:  # x's values changed through the weight, and were put back
        assert "the model wrote in place into its input arg0: the values were put back afterwards" in notes


def test_an_input_view_beside_the_written_one_is_not_named():
    # two disjoint halves of one tensor: only the half written is named
    base = torch.ones(2, 4)
    first, second = base[0], base[1]

    def model(a, b):
        b.add_(1)
        return a * b

    notes = ADAPTER.trace(model, (first, second)).notes
    assert torch.equal(base, torch.ones(2, 4))
    assert [note for note in notes if "its input" in note] == [
        "the model wrote in place into its input arg1: the values were put back afterwards"
    ]
