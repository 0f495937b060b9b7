"""Review of the PyTorch adapter: numbers that lied and state that tracing or timing changed.

Each test names what was wrong before its fix and the hand-derived right number.
"""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from neural_cost import AdapterError, estimate_trace, profile_model  # noqa: E402
from neural_cost.adapters import TorchAdapter  # noqa: E402
from neural_cost.analysis.memory import liveness_peak  # noqa: E402
from neural_cost.costs import causal_pairs  # noqa: E402

ADAPTER = TorchAdapter()


def flops(trace, kind=None):
    return sum(op.cost.flops * op.count for op in trace.operations if kind is None or op.kind == kind)


def signature(trace):
    return [(op.name, op.kind, op.cost) for op in trace.operations]


# --- counting under torch.inference_mode ------------------------------------------------------


class Composites(nn.Module):
    """Ops that are CompositeImplicitAutograd and had no table entry: conv2d, sdpa, einsum, pad."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x, q):
        y = self.conv(x)  # aten.conv2d
        a = F.scaled_dot_product_attention(q, q, q, is_causal=True)  # aten.scaled_dot_product_attention
        e = torch.einsum("ij,jk->ik", q[0, 0], q[0, 0].t())  # aten.einsum
        return F.pad(y, (1, 1)), a, e  # aten.pad


def test_composite_ops_are_counted_under_inference_mode_exactly_as_under_no_grad():
    # Under inference_mode these composites reached the mode whole, were not in the table and
    # were counted as unmodeled with 0 FLOPs: a conv net traced in inference_mode reported 0
    # conv FLOPs. Now their decomposition runs under the mode, once.
    model = Composites().eval()
    x, q = torch.randn(1, 3, 8, 8), torch.randn(1, 2, 16, 8)
    with torch.no_grad():
        reference = ADAPTER.trace(model, (x, q))
    with torch.inference_mode():
        trace = ADAPTER.trace(model, (x, q))
    assert trace.coverage.unmodeled == ()
    # conv: 2·output elements·C_in·k² = 2·(8·6·6)·3·9 = 15,552
    assert flops(trace, "conv") == 2 * (8 * 6 * 6) * 3 * 9
    # causal sdpa on the CPU flash kernel: 2·B·H·pairs·(D + Dv); its one 16×16 tile runs whole
    # (see the next test): pairs = 256, matmuls 2·1·2·256·16 = 16,384, + 1 scale and 5 softmax per
    # pair, − 2 per query row: 1·2·(256·(32 + 6) − 2·16) = 19,392
    assert flops(trace, "attention") == 1 * 2 * (256 * (2 * (8 + 8) + 6) - 2 * 16)
    # einsum (16, 8)·(8, 16): 2·16·8·16 = 4,096
    assert flops(trace, "matmul") == 2 * 16 * 8 * 16
    # nothing counted twice: the same records, and the same executed-op count, as under no_grad
    assert signature(trace) == signature(reference)
    assert trace.coverage.total == reference.coverage.total


def test_cpu_flash_attention_counts_the_tiles_it_computes():
    # PyTorch's CPU flash kernel skips causal work by tiles of q_split × 512 keys (q_split 256
    # from 768 queries), computing every pair of a tile the mask touches. It was counted as
    # skipping single pairs: Σ_{i<1024} (i+1) = 524,800 pairs per head.
    # Tiles for S = 1024: query blocks start at 0, 256, 512, 768; the last query of each sees
    # 256, 512, 768, 1024 keys, i.e. 1, 1, 2, 2 key tiles of 512: 256·(512 + 512 + 1024 + 1024)
    # = 786,432 pairs (dense: 1,048,576).
    q = torch.randn(1, 1, 1024, 8, requires_grad=True)
    trace = ADAPTER.trace(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True), (q,), training=True)
    (forward,) = [op for op in trace.operations if op.kind == "attention"]
    pairs = 256 * (512 + 512 + 1024 + 1024)
    assert forward.cost.dense_flops == 2 * 1024 * 1024 * (8 + 8)  # every pair, matmuls only
    # 2·B·H·pairs·(D + Dv) = 25,165,824 matmul, + 1 scale and 5 softmax per pair, − 2 per query row
    assert forward.cost.flops == pairs * (2 * (8 + 8) + 6) - 2 * 1024  # 29,882,368
    assert forward.cost.transcendentals == pairs  # one exponential per computed pair
    (backward,) = [op for op in trace.operations if op.name.endswith("_backward")]
    assert backward.cost.flops == 2 * pairs * (3 * 8 + 2 * 8)  # 62,914,560: the backward runs the same tiles
    assert q.grad is None


def test_causal_pairs_by_tiles():
    # S = 1024 in tiles of 256 × 512: 256·(512 + 512 + 1024 + 1024) = 786,432 (pairs: 524,800)
    assert causal_pairs(1024, 1024, "top_left", (256, 512)) == 786_432
    assert causal_pairs(1024, 1024, "top_left") == 1024 * 1025 // 2
    # tiles larger than the lengths are clamped to them: one 16 × 16 tile, all 256 pairs
    assert causal_pairs(16, 16, "top_left", (32, 512)) == 256
    # bottom-right, 4 queries over 10 keys in tiles of 2 × 4: the query blocks' last rows see
    # 8 and 10 keys → 2·8 + 2·10 = 36 pairs (the mask keeps 7 + 8 + 9 + 10 = 34)
    assert causal_pairs(4, 10, "bottom_right", (2, 4)) == 2 * 8 + 2 * 10
    assert causal_pairs(4, 10, "bottom_right") == 34


def test_decomposed_gru_splits_are_free_views():
    # The decomposed GRU cell splits its gates with aten.unsafe_split (views); it was unmodeled,
    # 10 ops of a 5-step GRU named as missing work. Now free with its reason.
    model = nn.GRU(8, 16, batch_first=True).eval()
    trace = ADAPTER.trace(model, (torch.randn(3, 5, 8),))
    assert trace.coverage.unmodeled == ()
    assert trace.coverage.fraction == 1.0


# --- no-mutation: gradients, optimizer parameters and state, train/eval flags ------------------


def test_existing_gradients_are_not_accumulated_into():
    # backward added this step's gradient into the user's .grad in place; the restore then put
    # the same (now changed) tensor back: the user's accumulated gradient grew by dL/dW.
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.weight.grad = torch.ones(2, 4)
    kept = model.weight.grad
    for step in (None, optimizer):
        ADAPTER.trace(model, (torch.randn(3, 4),), training=True, optimizer=step)
        assert model.weight.grad is kept and torch.equal(kept, torch.ones(2, 4))  # still exactly ones
        assert model.bias.grad is None


def test_optimizer_parameters_outside_the_module_are_restored():
    # Only the module's parameters were snapshotted: a tensor the optimizer holds but the model
    # does not own (or any tensor of a plain function) was left updated by the traced step,
    # w ← w - 0.1·∂L/∂w, and kept a .grad.
    torch.manual_seed(0)
    w = torch.randn(4, 2, requires_grad=True)
    extra = nn.Parameter(torch.randn(2))
    w0, extra0 = w.detach().clone(), extra.detach().clone()
    x = torch.randn(3, 4)
    ADAPTER.trace(lambda x: x @ w, (x,), training=True, optimizer=torch.optim.SGD([w], lr=0.1))
    assert torch.equal(w.detach(), w0) and w.grad is None
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD([*model.parameters(), extra], lr=0.1)
    ADAPTER.trace(lambda x: model(x) + extra, (x,), training=True, optimizer=optimizer)
    assert torch.equal(extra.detach(), extra0) and extra.grad is None


def test_inputs_that_require_grad_get_no_gradient():
    # backward gave the user's input x a .grad (ones(3, 2) @ W: rows of the column sums of W).
    x = torch.randn(3, 4, requires_grad=True)
    ADAPTER.trace(nn.Linear(4, 2), (x,), training=True)
    assert x.grad is None


def test_adam_state_is_restored_in_place():
    # The state was restored by load_state_dict(deepcopy(state_dict())): equal values in new
    # tensors and dicts, so a reference the user held to exp_avg went stale.
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    entry = optimizer.state[model.weight]
    exp_avg, step = entry["exp_avg"], entry["step"]
    values = exp_avg.clone(), step.clone()
    ADAPTER.trace(model, (torch.randn(3, 4),), training=True, optimizer=optimizer)
    assert optimizer.state[model.weight] is entry and entry["exp_avg"] is exp_avg and entry["step"] is step
    assert torch.equal(exp_avg, values[0]) and torch.equal(step, values[1])  # step still 1, not 2
    assert len(optimizer.state) == 2


def test_a_step_that_raises_restores_parameters_gradients_and_optimizer_state():
    # the error path of the fixes above: the update, the grads and the state all put back
    class Raises(torch.optim.Adam):
        def step(self, closure=None):
            super().step(closure)
            raise RuntimeError("after the update")

    model = nn.Linear(4, 2)
    optimizer = Raises(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    torch.optim.Adam.step(optimizer)
    model.weight.grad = torch.ones(2, 4)
    kept, entry = model.weight.grad, optimizer.state[model.weight]
    values = {k: v.clone() for k, v in model.state_dict().items()}
    exp_avg = entry["exp_avg"].clone()
    with pytest.raises(AdapterError, match="after the update"):
        ADAPTER.trace(model, (torch.randn(3, 4),), training=True, optimizer=optimizer)
    assert all(torch.equal(values[k], v) for k, v in model.state_dict().items())
    assert model.weight.grad is kept and torch.equal(kept, torch.ones(2, 4))
    assert optimizer.state[model.weight] is entry and torch.equal(entry["exp_avg"], exp_avg)
    assert int(entry["step"]) == 1


def test_each_submodules_train_eval_flag_is_kept():
    # The restore called model.train(root flag), which sets every submodule: a BatchNorm frozen
    # in eval inside a model in train mode (fine-tuning) was switched to train by tracing.
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5)).train()
    model[1].eval()
    ADAPTER.trace(model, (torch.randn(3, 4),))
    ADAPTER.trace(model, (torch.randn(3, 4),), training=True)
    assert [m.training for m in model] == [True, False, True]


# --- liveness --------------------------------------------------------------------------------


def test_liveness_keeps_outputs_to_the_end():
    # a = relu(x); b = a·2; c = b + 1; return a, c. `a` is returned, so it lives to the end; it
    # was freed after its last read (step 2), giving 8n. Live after each step: A=4n; A+B=8n;
    # A+B+C=12n (B dies after) → peak 12n = 12,000 bytes.
    n = 1000

    def model(x):
        a = torch.relu(x)
        b = a * 2
        return a, b + 1

    trace = ADAPTER.trace(model, (torch.randn(n),))
    assert liveness_peak(trace.dataflow) == 12 * n


def test_liveness_frees_outputs_nobody_reads():
    # max_pool2d on the CPU also writes int64 indices that nothing reads; they were kept to the
    # end. x (1, 4, 16, 16) → pooled P (1, 4, 8, 8) = 1,024 B with indices I = 2,048 B; y = P·2
    # (1,024 B); z = y + 1 (1,024 B). Live: P+I = 3,072 (I dies); P+y = 2,048; y+z = 2,048
    # → peak 3,072 (it was 4,096: I + P + y).
    def model(x):
        return F.max_pool2d(x, 2) * 2 + 1

    trace = ADAPTER.trace(model, (torch.randn(1, 4, 16, 16),))
    assert liveness_peak(trace.dataflow) == 1024 + 2048


# --- memory profile --------------------------------------------------------------------------


def test_training_memory_counts_gradients_only_for_parameters_that_train():
    # Gradient and Adam state bytes were computed over every parameter and buffer: a frozen
    # weight (LoRA-style fine-tuning) made training_minimum 4 × 526,336 = 2,105,344 bytes.
    model = nn.Linear(256, 512)
    model.weight.requires_grad_(False)
    profile = profile_model(model, (torch.randn(8, 256),), ADAPTER, training=True, optimizer_state_multiplier=2)
    memory = profile.memory
    assert memory.parameter_bytes == 4 * (256 * 512 + 512)  # 526,336: every parameter is held
    assert memory.gradient_bytes == 4 * 512  # 2,048: only the bias trains
    assert memory.optimizer_state_bytes == 2 * 4 * 512  # 4,096
    assert memory.training_minimum_bytes == 526_336 + 2_048 + 4_096  # 532,480


def test_training_memory_gives_buffers_no_gradient():
    # BatchNorm's running statistics (and num_batches_tracked) are buffers: no gradient.
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))
    profile = profile_model(model, (torch.randn(4, 8),), ADAPTER, training=True, optimizer_state_multiplier=0)
    # held: Linear 8·8 + 8 and BN γ, β (16) floats = 88·4 = 352, + running mean/var 16·4 = 64
    # + num_batches_tracked 8 = 424 bytes; gradients only for the 352 that train (it was 424)
    assert (profile.memory.parameter_bytes, profile.memory.gradient_bytes) == (424, 352)


# --- benchmark -------------------------------------------------------------------------------


def test_benchmark_changes_nothing_in_a_model_in_train_mode():
    # 2 warmup + 3 timed runs of a BatchNorm in train mode updated its running statistics five
    # times (num_batches_tracked 0 → 5), and dropout consumed the global RNG.
    model = nn.Sequential(nn.BatchNorm1d(4), nn.Dropout(0.5)).train()
    x = torch.randn(8, 4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    ADAPTER.benchmark(model, x, warmup=2, repeats=3)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert int(model[0].num_batches_tracked) == 0
    assert torch.equal(rng, torch.get_rng_state())


def test_benchmark_passes_every_keyword_to_the_model():
    # kwargs were spread into benchmark()'s own keywords: a model keyword named `device` never
    # reached the model and became the measurement's device label instead.
    seen = []

    def model(x, device=None):
        seen.append(device)
        return x * 2

    measured = ADAPTER.benchmark(model, torch.randn(4), warmup=0, repeats=2, kwargs={"device": "npu9"})
    assert seen == ["npu9"] * 3  # the untimed guarded probe run, then the 2 timed runs
    assert measured.device_kind == "cpu" and measured.device != "npu9"


def test_masked_fill_and_the_embedding_gradient_zero_fill_name_catalog_entries():
    """``masked_fill`` is a select (the catalog's ``where``: 1 FLOP an element) and the zeroed
    table of an embedding's gradient a ``fill`` (0 FLOPs): both named entries the catalog did not
    have ("masked_fill", "zeros"), so every GPT-2 ``generate`` and every LM training step said
    "names no catalog entry ... the default" in its report. masked_fill of a (4, 8) tensor: 32 FLOPs."""
    x, mask = torch.randn(4, 8), torch.rand(4, 8) > 0.5
    estimate = estimate_trace(ADAPTER.trace(lambda x, m: x.masked_fill(m, 0.0), (x, mask)))
    assert estimate.flops == 32 and not [n for n in estimate.notes if "names no catalog entry" in n]
    table = nn.Embedding(16, 4)
    ids = torch.tensor([[1, 2, 3]])
    step = ADAPTER.trace(table, (ids,), training=True)
    fills = [op for op in step.operations if op.name.endswith(".zero")]
    assert fills and all(op.attrs["op"] == "fill" for op in fills)
    assert not [n for n in estimate_trace(step).notes if "names no catalog entry" in n]
