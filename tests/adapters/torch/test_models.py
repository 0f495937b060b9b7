"""Real models: coverage, agreement with FlopCounterMode per aten op, closed forms it misses."""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from neural_cost.adapters import TorchAdapter  # noqa: E402

ADAPTER = TorchAdapter()
COUNTED = ("mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward")


def our_counts(trace):
    """FLOPs of the matmul/conv/attention records per producing aten op (attention: dense)."""
    counts = {}
    for op in trace.operations:
        if op.kind in ("matmul", "conv", "attention"):
            base = op.name.split(".")[0]
            value = op.cost.dense_flops if op.kind == "attention" else op.cost.flops
            counts[base] = counts.get(base, 0) + value * op.count
    return counts


def torch_counts(model, args):
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(*args)
    return {str(k.__name__): v for k, v in counter.get_flop_counts().get("Global", {}).items()}


class Transformer(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.embed = nn.Embedding(100, d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, tokens):
        x = self.embed(tokens)
        x = self.norm(x + self.attn(x, x, x, need_weights=False)[0])
        return x + self.ff(x)


class CausalGQA(nn.Module):
    def __init__(self, d=64, q_heads=8, kv_heads=2):
        super().__init__()
        self.q_heads, self.kv_heads, self.dim = q_heads, kv_heads, d // q_heads
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * kv_heads * self.dim)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.q_heads, self.dim).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.dim).unbind(2)
        out = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True)
        return out.transpose(1, 2).reshape(b, s, -1)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=4),
            nn.ReLU(),
            nn.ConvTranspose2d(32, 8, 2, stride=2),
            nn.AdaptiveAvgPool2d(1),
        )

    def forward(self, x):
        return self.body(x).flatten(1)


MODELS = {
    "transformer": (lambda: Transformer().eval(), lambda: (torch.randint(0, 100, (2, 12)),)),
    "causal_gqa": (lambda: CausalGQA().eval(), lambda: (torch.randn(2, 16, 64),)),
    "convnet": (lambda: ConvNet().eval(), lambda: (torch.randn(2, 3, 16, 16),)),
    "lstm": (lambda: nn.LSTM(8, 16, num_layers=2, batch_first=True).eval(), lambda: (torch.randn(3, 5, 8),)),
    "embedding": (
        lambda: nn.Sequential(nn.Embedding(1000, 32), nn.Linear(32, 4)).eval(),
        lambda: (torch.randint(0, 1000, (4, 7)),),
    ),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_real_models_are_covered(name):
    make_model, make_inputs = MODELS[name]
    trace = ADAPTER.trace(make_model(), make_inputs())
    assert trace.coverage.fraction >= 0.99, trace.coverage.unmodeled


@pytest.mark.parametrize("name", list(MODELS))
def test_matmul_and_conv_flops_equal_flop_counter_modes(name):
    torch.manual_seed(0)
    make_model, make_inputs = MODELS[name]
    model, args = make_model(), make_inputs()
    theirs = torch_counts(model, args)
    ours = our_counts(ADAPTER.trace(model, args))
    for op in COUNTED:
        if theirs.get(op):
            assert ours.get(op) == theirs[op], (op, ours, theirs)


def test_causal_gqa_attention_closed_form():
    trace = ADAPTER.trace(CausalGQA().eval(), (torch.randn(2, 16, 64),))
    (attention,) = [op for op in trace.operations if op.kind == "attention"]
    # causal on the CPU flash kernel, which skips whole tiles of 32 queries × 512 keys (clamped
    # to 16 × 16 here): the one tile is touched by the mask, so all 16·16 = 256 pairs run, not
    # the Σ_{i<16} (i+1) = 136 the mask keeps
    pairs = 16 * 16
    # B·Hq·(pairs·(2·(D+Dv) matmul + 1 scale + 5 softmax) − 2 per query row) = 16·(256·38 − 32) = 155,136
    assert attention.cost.flops == 2 * 8 * (pairs * (2 * (8 + 8) + 6) - 2 * 16)
    assert attention.cost.dense_flops == 2 * 2 * 8 * 16 * 16 * (8 + 8)  # FlopCounterMode's dense count: 131,072


def test_lstm_matmul_flops_closed_form():
    batch, steps, inputs, hidden = 3, 5, 8, 16
    trace = ADAPTER.trace(
        nn.LSTM(inputs, hidden, num_layers=2, batch_first=True).eval(), (torch.randn(batch, steps, inputs),)
    )
    matmul = sum(op.cost.flops * op.count for op in trace.operations if op.kind == "matmul")
    # per layer and step: x·W_ih (I→4H) and h·W_hh (H→4H): 2·B·(I+H)·4H; layer 2's input is H
    expected = steps * 2 * batch * (inputs + hidden) * 4 * hidden + steps * 2 * batch * (hidden + hidden) * 4 * hidden
    assert matmul == expected  # 5·2·3·24·64 + 5·2·3·32·64 = 46,080 + 61,440 = 107,520
