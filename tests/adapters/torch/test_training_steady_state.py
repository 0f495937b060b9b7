"""A training trace counts the step the timed runs repeat: a steady-state optimizer step.

The timed runs of ``benchmark(training=True)`` come after an untimed probe step and warmup, so
the optimizer's state (SGD's momentum buffer, Adam's moments) already exists. The trace used to
count the first step: SGD momentum copied the gradient into a fresh buffer (clone + one update,
2 FLOPs per element instead of 4) and Adam zero-filled its moments (+2 writes per element).
``trace(training=True, optimizer=...)`` now runs one untraced step, traces the second, and puts
everything back once. Counts are per parameter element of a Linear(16, 8): 16·8 + 8 = 136.
"""

import collections

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from neural_cost.adapters import TorchAdapter  # noqa: E402
from tests.adapters.torch.test_no_mutation import assert_unchanged, state_of  # noqa: E402

ADAPTER = TorchAdapter()
ELEMENTS = 16 * 8 + 8  # 136 parameter elements in 2 tensors (weight, bias)
TENSORS = 2
X = torch.randn(4, 16)


def optimizer_scope(trace):
    ops = [op for op in trace.operations if op.scope == "optimizer"]
    flops = sum(op.cost.flops * op.count for op in ops)
    moved = sum((op.cost.read_bytes + op.cost.write_bytes) * op.count for op in ops)
    return flops, moved, collections.Counter(op.name for op in ops)


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def adam(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3)


# Steady-state SGD momentum (dampening 0), per element, float32:
#   buf.mul_(μ)           1 FLOP, read 4 + write 4 B
#   buf.add_(g)           1 FLOP (alpha 1), read 8 + write 4 B
#   p.add_(buf, alpha=-lr) 2 FLOPs, read 8 + write 4 B
# = 4 FLOPs and 32 B per element (the first step: clone 0 + p.add_ 2 = 2 FLOPs).
SGD_FLOPS = 4 * ELEMENTS  # 544
SGD_BYTES = 32 * ELEMENTS  # 4,352
# Steady-state Adam (single-tensor CPU kernel), per element: exp_avg.lerp_(g) 3 (a + w·(b-a)),
# exp_avg_sq.mul_(β2) 1, .addcmul_(g, g) 3, sqrt 1, ÷ bias correction 1, + eps 1,
# p.addcdiv_(exp_avg, denom) 3 = 13 FLOPs; bytes 12 + 8 + 16 + 8 + 8 + 8 + 16 = 76.
# Per tensor: step += 1 (1 FLOP, 8 B) and step.item() (0 FLOPs, 8 B).
ADAM_FLOPS = 13 * ELEMENTS + 1 * TENSORS  # 1,770
ADAM_BYTES = 76 * ELEMENTS + 16 * TENSORS  # 10,368


@pytest.mark.parametrize(
    ("make_optimizer", "flops", "moved"),
    [(sgd, SGD_FLOPS, SGD_BYTES), (adam, ADAM_FLOPS, ADAM_BYTES)],
    ids=["SGD momentum", "Adam"],
)
def test_the_traced_optimizer_step_is_a_steady_state_step(make_optimizer, flops, moved):
    # before the fix: SGD momentum 272 FLOPs (2 per element: clone + p.add_), 2,720 B;
    # Adam 1,770 FLOPs but 11,456 B (zeros_like fills of 2 moments: 2 × 136 × 4 B = +1,088 B)
    torch.manual_seed(0)
    model = nn.Linear(16, 8)
    optimizer = make_optimizer(model)
    before = state_of(model, optimizer)
    fresh = optimizer_scope(ADAPTER.trace(model, (X,), training=True, optimizer=optimizer))
    assert fresh[:2] == (flops, moved)
    assert not {"clone", "zeros_like", "zero_", "fill_"} & set(fresh[2])
    assert_unchanged(before, model, optimizer)  # parameters, grads, optimizer state, RNG
    assert len(optimizer.state) == 0 and all(p.grad is None for p in model.parameters())
    # an optimizer that has already stepped traces the same step, and is left at its step
    model(X).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    before = state_of(model, optimizer)
    assert optimizer_scope(ADAPTER.trace(model, (X,), training=True, optimizer=optimizer)) == fresh
    assert_unchanged(before, model, optimizer)


def test_the_untraced_step_leaves_no_gradient_on_an_input_that_requires_grad():
    # the untraced step's backward gives x a .grad the optimizer does not clear; the traced
    # backward must write a fresh one (no accumulation add), and the user's x ends with none
    torch.manual_seed(0)
    model = nn.Linear(16, 8)
    x = X.clone().requires_grad_()
    without = ADAPTER.trace(model, (X,), training=True, optimizer=sgd(model))
    trace = ADAPTER.trace(model, (x,), training=True, optimizer=sgd(model))
    assert x.grad is None
    backward = [op for op in trace.operations if op.scope == "backward"]
    # + dx = dy·W: one more matmul, 2·4·8·16 = 1,024 FLOPs, and no add of a previous gradient
    assert (
        sum(op.cost.flops for op in backward)
        - sum(op.cost.flops for op in without.operations if op.scope == "backward")
        == 2 * 4 * 8 * 16
    )
    assert optimizer_scope(trace)[0] == SGD_FLOPS


def test_an_input_written_in_place_by_the_step_is_put_back_once():
    # the untraced step and the traced step both double x: put back once, from before the first
    model = nn.Linear(16, 8)

    def forward(x):
        x.mul_(2)
        return model(x)

    x = X.clone()
    trace = ADAPTER.trace(forward, (x,), training=True, optimizer=sgd(model))
    assert torch.equal(x, X)
    assert "the model wrote in place into its input arg0: the values were put back afterwards" in trace.notes
