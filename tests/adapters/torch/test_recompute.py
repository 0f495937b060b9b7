"""A GPT-style training step with and without ``torch.utils.checkpoint`` on its block.

Sizes: batch B=2, sequence S=8, width D=16, heads H=2 (DH=8), MLP F=64, vocabulary V=32; every
Linear without bias. The backward of a checkpointed block runs its forward again. Hand-derived,
at M = B·S = 16 rows:
  q, k, v, o projections  4 × 2·16·16·16        = 32,768
  scores q·kᵀ, probs·v    2 × 2·(B·H)·S·S·DH = 2 × 2·4·8·8·8 = 8,192
  fc1                     2·16·16·64            = 32,768
  matmuls                                        = 73,728
and, per the catalog: scale s/√DH 256, ~mask 64, masked_fill 256, softmax over 32 rows of 8
5·256 - 2·32 = 1,216, residual x + attention 256, gelu 5 per element · 1,024 = 5,120:
  elementwise                                    = 7,168
  recomputed (non-reentrant)                     = 73,728 + 7,168 = 80,896 FLOPs
The non-reentrant checkpoint stops recomputing once every saved tensor is back (early stop, the
default): fc2 saves its input before it runs, so fc2 (2·16·64·16 = 32,768) and the residual add
after it (256) are not run again. The reentrant one (and the non-reentrant one with early stop
off) runs the whole block: 80,896 + 32,768 + 256 = 113,920 FLOPs.
FlopCounterMode, an independent count of the matmuls, sees the same extra matmul FLOPs.
"""

import math

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from neural_cost.adapters import TorchAdapter  # noqa: E402

ADAPTER = TorchAdapter()
B, S, D, H, FF, V = 2, 8, 16, 2, 64, 32
DH = D // H
MATMULS, ELEMENTWISE = 73_728, 7_168
EARLY_STOP = MATMULS + ELEMENTWISE  # 80,896
WHOLE_BLOCK = EARLY_STOP + 32_768 + 256  # 113,920


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(D, FF, bias=False), nn.Linear(FF, D, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(S, S, dtype=torch.bool)))

    def forward(self, x):
        q, k, v = (m(x).view(B, S, H, DH).transpose(1, 2) for m in (self.q, self.k, self.v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(DH)
        attention = torch.softmax(scores.masked_fill(~self.causal, float("-inf")), dim=-1) @ v
        x = x + self.o(attention.transpose(1, 2).reshape(B, S, D))
        return x + self.fc2(F.gelu(self.fc1(x)))


class GPT(nn.Module):
    def __init__(self, checkpointing=None):
        super().__init__()
        self.embedding, self.block, self.head = nn.Embedding(V, D), Block(), nn.Linear(D, V, bias=False)
        self.checkpointing = checkpointing

    def forward(self, tokens):
        x = self.embedding(tokens)
        if self.checkpointing is None:
            x = self.block(x)
        else:
            x = checkpoint(self.block, x, use_reentrant=self.checkpointing == "reentrant")
        return self.head(x)


def model_and_loss(checkpointing=None):
    torch.manual_seed(0)
    model, tokens = GPT(checkpointing), torch.randint(0, V, (B, S))
    targets = (tokens + 1) % V
    return model, tokens, lambda logits: F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


def trace(checkpointing=None):
    model, tokens, loss = model_and_loss(checkpointing)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return ADAPTER.trace(model, (tokens,), training=True, loss_fn=loss, optimizer=optimizer)


def flops(trace, recompute=None, kind=None):
    return sum(
        op.cost.flops * op.count
        for op in trace.operations
        if (recompute is None or (op.attrs.get("recompute") == "true") == recompute) and kind in (None, op.kind)
    )


def counted_matmuls(checkpointing):
    model, tokens, loss = model_and_loss(checkpointing)
    with FlopCounterMode(display=False) as counter:
        loss(model(tokens)).backward()
    return counter.get_total_flops()


@pytest.fixture(scope="module")
def plain():
    return trace()


@pytest.mark.parametrize(
    ("checkpointing", "recomputed", "matmuls"),
    [("non_reentrant", EARLY_STOP, MATMULS), ("reentrant", WHOLE_BLOCK, MATMULS + 32_768)],
)
def test_model_flops_are_the_same_and_hardware_adds_the_recomputation(plain, checkpointing, recomputed, matmuls):
    checkpointed = trace(checkpointing)
    assert flops(plain, recompute=True) == 0
    assert flops(checkpointed, recompute=False) == flops(plain)
    assert flops(checkpointed) - flops(plain) == flops(checkpointed, recompute=True) == recomputed
    assert flops(checkpointed, recompute=True, kind="matmul") == matmuls
    assert counted_matmuls(checkpointing) - counted_matmuls(None) == matmuls  # FlopCounterMode agrees
    assert {op.scope for op in checkpointed.operations if op.attrs.get("recompute")} == {"backward"}


def test_without_early_stop_the_non_reentrant_checkpoint_recomputes_the_whole_block(plain):
    with set_checkpoint_early_stop(False):
        checkpointed = trace("non_reentrant")
    assert flops(checkpointed, recompute=True) == WHOLE_BLOCK
    assert flops(checkpointed, recompute=False) == flops(plain)


def test_inference_recomputes_nothing():
    model, tokens, _ = model_and_loss("non_reentrant")
    assert not any("recompute" in op.attrs for op in ADAPTER.trace(model, (tokens,)).operations)
