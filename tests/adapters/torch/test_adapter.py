"""TorchAdapter: tracing real models without changing them, scopes, training, memory, timing."""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from neural_cost import AdapterError, HardwareError, profile_model  # noqa: E402
from neural_cost.adapters import TorchAdapter  # noqa: E402
from neural_cost.analysis.memory import liveness_peak  # noqa: E402

ADAPTER = TorchAdapter()


def flops(trace, kind=None, name=None):
    return sum(
        op.cost.flops * op.count
        for op in trace.operations
        if (kind is None or op.kind == kind) and (name is None or op.name == name)
    )


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.grouped = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=4)
        self.up = nn.ConvTranspose2d(32, 8, 2, stride=2)
        self.head = nn.Linear(8 * 16 * 16, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)))
        x = F.relu(self.grouped(x))
        return self.head(self.up(x).flatten(1))


def snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_scopes_come_from_the_module_tree():
    model = ConvNet().eval()
    trace = ADAPTER.trace(model, (torch.randn(2, 3, 16, 16),))
    convs = {op.scope: op for op in trace.operations if op.kind == "conv"}
    assert set(convs) == {"stem", "grouped", "up"}
    # stem: 2·N·H·W·Cout·(Cin/groups)·kh·kw = 2·2·16·16·16·3·3·3 = 442,368
    assert convs["stem"].cost.flops == 2 * 2 * 16 * 16 * 16 * 3 * 3 * 3
    assert trace.coverage.fraction >= 0.99, trace.coverage.unmodeled


def test_tracing_changes_nothing_even_in_train_mode():
    model = ConvNet().train()  # BatchNorm would update its running statistics
    before = snapshot(model)
    x = torch.randn(2, 3, 16, 16)
    rng = torch.get_rng_state()
    first = ADAPTER.trace(model, (x,))
    second = ADAPTER.trace(model, (x,))
    assert same(before, snapshot(model)) and torch.equal(rng, torch.get_rng_state())
    assert model.training
    assert [op.cost for op in first.operations] == [op.cost for op in second.operations]
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_hooks_and_modes_are_removed_when_the_model_raises():
    model = ConvNet().eval()
    before = snapshot(model)
    with pytest.raises(AdapterError, match=r"running ConvNet raised RuntimeError: .*"):
        ADAPTER.trace(model, (torch.randn(2, 5, 16, 16),))  # 5 channels for a 3-channel stem
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert same(before, snapshot(model))
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    assert _get_current_dispatch_mode() is None


def test_works_under_no_grad_and_inference_mode_and_with_kwargs():
    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x, attention_mask=None):
            return self.proj(x) * attention_mask.unsqueeze(-1)

    model = Masked().eval()
    x, mask = torch.randn(2, 5, 8), torch.ones(2, 5)
    with torch.no_grad():
        a = ADAPTER.trace(model, (x,), {"attention_mask": mask})
    with torch.inference_mode():
        b = ADAPTER.trace(model, (x,), {"attention_mask": mask})
    assert flops(a) == flops(b) > 0
    assert ("attention_mask", (2, 5)) in a.input_shapes


def test_a_plain_function_of_tensors_works():
    trace = ADAPTER.trace(lambda a, b: torch.tanh(a @ b), (torch.randn(32, 16), torch.randn(16, 8)))
    assert flops(trace, kind="matmul") == 2 * 32 * 16 * 8  # 8,192


def test_inputs_in_a_list_or_dict_are_each_named_by_their_path():
    """A forward that takes its inputs as a list (or a dict) of tensors: the trace's inputs are each of them, named by
    its path as JAX's adapter and TensorFlow's name theirs (``arg0[1]``, ``arg0['b']``); a keyword argument by its
    key. The product counts 2 · 3 · 24 · 4 = 576 FLOPs either way."""

    class Joined(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(24, 4)

        def forward(self, xs, scale=None):
            first, second = (xs["a"], xs["b"]) if isinstance(xs, dict) else xs
            return self.head(torch.cat([first, second], -1)) * (1 if scale is None else scale)

    a, b = torch.ones(3, 16), torch.ones(3, 8)
    listed = ADAPTER.trace(Joined(), ([a, b],), {"scale": torch.ones(4)})
    assert listed.input_shapes == (("arg0[0]", (3, 16)), ("arg0[1]", (3, 8)), ("scale", (4,)))
    named = ADAPTER.trace(Joined(), ({"a": a, "b": b},))
    assert named.input_shapes == (("arg0['a']", (3, 16)), ("arg0['b']", (3, 8)))
    assert flops(listed, kind="matmul") == flops(named, kind="matmul") == 2 * 3 * 24 * 4 == 576


def test_bad_input_is_a_clear_error():
    with pytest.raises(AdapterError, match="model=3 is not callable"):
        ADAPTER.trace(3, ())
    with pytest.raises(AdapterError, match="running Linear raised RuntimeError: mat1 and mat2 shapes cannot"):
        ADAPTER.trace(nn.Linear(8, 4), (torch.randn(2, 9),))
    with pytest.raises(HardwareError, match="device='npu9' is not a device"):
        ADAPTER.hardware("npu9")


def test_training_step_is_split_and_restored():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    before = snapshot(model)
    trace = ADAPTER.trace(model, (x,), training=True, loss_fn=lambda out: F.cross_entropy(out, y), optimizer=optimizer)
    assert same(before, snapshot(model))
    assert all(p.grad is None for p in model.parameters()) and len(optimizer.state) == 0
    scopes = {op.scope for op in trace.operations}
    assert {"forward", "backward", "optimizer"} <= scopes
    backward = sorted(op.cost.flops for op in trace.operations if op.scope == "backward" and op.kind == "matmul")
    # dW2 = hᵀ·dy: 2·32·128·10; dh = dy·W2ᵀ: 2·32·10·128; dW1 = xᵀ·dh': 2·32·64·128 (no dx: x needs no grad)
    assert backward == sorted([2 * 32 * 128 * 10, 2 * 32 * 10 * 128, 2 * 32 * 64 * 128])


def test_liveness_on_a_four_op_chain():
    n = 1000
    model = lambda x: ((torch.relu(x) * 2.0) + 1.0).sum()  # noqa: E731
    trace = ADAPTER.trace(model, (torch.randn(n),))
    # relu allocates A (4n), mul B (4n) then A is dead, add C (4n) then B is dead, sum D (4 bytes):
    # live after each step: A=4n; A+B=8n; B+C=8n; C+D=4n+4 → peak 8n = 8,000 bytes
    assert liveness_peak(trace.dataflow) == 8 * n
    profile = profile_model(model, (torch.randn(n),), ADAPTER)
    memory = profile.memory
    assert memory.activation_minimum_peak_bytes <= memory.activation_liveness_peak_bytes
    assert memory.activation_liveness_peak_bytes <= memory.activation_conservative_peak_bytes
    assert (memory.activation_minimum_peak_bytes, memory.activation_conservative_peak_bytes) == (4 * n, 12 * n + 4)


def test_profile_model_training_memory():
    model = nn.Linear(256, 512)
    profile = profile_model(model, (torch.randn(8, 256),), ADAPTER, training=True, optimizer_state_multiplier=2)
    parameter_bytes = 4 * (256 * 512 + 512)  # weight and bias in float32: 526,336
    assert profile.memory.parameter_bytes == parameter_bytes
    assert profile.memory.training_minimum_bytes == 4 * parameter_bytes  # params + grads + Adam's two moments


def test_benchmark_runs_under_no_grad_on_the_inputs_device():
    # no_grad, not inference_mode: a tensor the forward keeps must not become an inference
    # tensor (test_no_mutation.py shows the failure that caused)
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
            return x * 2

    m = ADAPTER.benchmark(Probe(), torch.randn(4), warmup=1, repeats=3)
    # 1 untimed guarded probe + 1 warmup + 3 timed runs = 5 calls, each without grad or inference mode
    assert m.runs == 3 and m.device_kind == "cpu" and seen == [(False, False)] * 5


def test_calibrate_measures_float32_and_bfloat16():
    spec, result = ADAPTER.calibrate(size=128, copy_bytes=8 << 20, repeats=2)
    assert [p.dtype for p in result.matmuls] == ["float32", "bfloat16"] and spec.has_peak("bfloat16")


def test_a_compiled_modules_original_module_traces_like_the_module():
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    compiled = torch.compile(model)  # nothing compiles until it is called; we trace the original
    x = torch.randn(4, 16)
    assert [op.cost for op in ADAPTER.trace(compiled._orig_mod, (x,)).operations] == [
        op.cost for op in ADAPTER.trace(model, (x,)).operations
    ]
