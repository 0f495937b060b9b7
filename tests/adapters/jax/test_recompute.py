"""A GPT-style training step with and without ``jax.checkpoint`` on its block: what is recomputed.

Sizes: batch B=2, sequence S=8, width D=16, heads H=2 (DH=8), MLP F=64, vocabulary V=32.
The block (the attention and the MLP, residuals around each) runs forward once; under
``jax.grad(jax.checkpoint(block))`` its backward recomputes, inside the transposed ``remat2``,
every forward value the gradients need — all of the block but its last matmul (h·W2: only its
inputs are needed) and the residual add after it. Hand-derived, at M = B·S = 16 rows:
  q, k, v, o projections  4 × 2·16·16·16        = 32,768
  scores q·kᵀ, probs·v    2 × 2·(B·H)·S·S·DH = 2 × 2·4·8·8·8 = 8,192
  h = x·W1                2·16·16·64            = 32,768
  matmuls                                        = 73,728   (h·W2, another 32,768, is not recomputed)
and, per the catalog (one FLOP per output element of an elementwise op, n-1 per reduced row
of n, a logistic 4 per element):
  scale s/√DH 256 · causal mask: tril (add 64, ge 64, select 64) and where 256 = 704
  softmax over 32 rows of 8: max 32·7 = 224, sub 256, exp 256, sum 224, divide 256 = 1,216
  residual x + attention 256 · gelu as h·σ(1.702h): scale 1,024, logistic 4·1,024, mul 1,024
                                                 = 256 + 6,144 = 6,400
  elementwise                                    = 704 + 1,216 + 6,400 = 8,320
  recomputed                                     = 73,728 + 8,320 = 82,048 FLOPs
The jvp coefficients the recomputation also makes (1 - σ for the logistic, the max's
one-hot...) are what an uncheckpointed forward computes and saves too: they are model work.
"""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy

from neural_cost.adapters import JaxAdapter  # noqa: E402

ADAPTER = JaxAdapter(cross_check=False)
B, S, D, H, F, V = 2, 8, 16, 2, 64, 32
DH = D // H
MATMULS, ELEMENTWISE = 73_728, 8_320
RECOMPUTED = MATMULS + ELEMENTWISE  # 82,048
LAYERS = 3


def heads(t):
    return t.reshape(B, S, H, DH).transpose(0, 2, 1, 3)


def block(p, x):
    q, k, v = heads(x @ p["wq"]), heads(x @ p["wk"]), heads(x @ p["wv"])
    s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), (q @ k.transpose(0, 1, 3, 2)) / DH**0.5, -1e9)
    e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
    x = x + ((e / jnp.sum(e, axis=-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(B, S, D) @ p["wo"]
    h = x @ p["w1"]
    return x + (h * jax.lax.logistic(1.702 * h)) @ p["w2"]


def step(checkpoint=False, policy=None, layers=0):
    blk = jax.checkpoint(block, policy=policy) if checkpoint else block

    def loss(p, tokens, targets):
        x = p["emb"][tokens]
        if layers:  # the block's weights stacked and scanned, as a deep model's layers are
            stacked = {k: jnp.stack([p[k]] * layers) for k in ("wq", "wk", "wv", "wo", "w1", "w2")}
            x = jax.lax.scan(lambda x, w: (blk(w, x), None), x, stacked)[0]
        else:
            x = blk(p, x)
        logits = jax.nn.log_softmax(x @ p["head"])
        return -jnp.mean(jnp.take_along_axis(logits, targets[..., None], axis=-1))

    return jax.jit(jax.value_and_grad(loss))


def arguments():
    shapes = {"emb": (V, D), "wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "w1": (D, F), "w2": (F, D)}
    shapes["head"] = (D, V)
    keys = jax.random.split(jax.random.key(0), len(shapes) + 1)
    params = {
        name: jax.random.normal(key, shape) * 0.1 for (name, shape), key in zip(shapes.items(), keys[:-1], strict=True)
    }
    tokens = jax.random.randint(keys[-1], (B, S), 0, V)
    return params, tokens, (tokens + 1) % V


def flops(trace, recompute=None, kind=None):
    """Total FLOPs of the trace's records; ``recompute`` True/False: only those (not) labeled."""
    return sum(
        op.cost.flops * op.count
        for op in trace.operations
        if (recompute is None or (op.attrs.get("recompute") == "true") == recompute) and kind in (None, op.kind)
    )


@pytest.fixture(scope="module")
def traces():
    args = arguments()
    return {
        name: ADAPTER.trace(step(*options), args)
        for name, options in {
            "plain": (),
            "checkpoint": (True,),
            "dots_saveable": (True, jax.checkpoint_policies.dots_saveable),
        }.items()
    }


def test_model_flops_are_the_same_with_and_without_checkpointing(traces):
    plain, checkpointed = traces["plain"], traces["checkpoint"]
    assert flops(plain, recompute=True) == 0
    assert flops(checkpointed, recompute=False) == flops(plain)
    assert flops(checkpointed) - flops(plain) == flops(checkpointed, recompute=True) == RECOMPUTED
    assert flops(checkpointed, recompute=True, kind="matmul") == MATMULS


def test_recomputed_records_are_backward_records(traces):
    checkpointed = traces["checkpoint"]
    recomputed = [op for op in checkpointed.operations if op.attrs.get("recompute")]
    assert recomputed and all(op.attrs["phase"] == "backward" for op in recomputed)
    assert {op.attrs.get("phase") for op in traces["plain"].operations} == {None, "backward"}


def test_a_policy_that_saves_the_dots_recomputes_only_the_rest(traces):
    # dots_saveable keeps every matmul's output: only the 8,320 elementwise FLOPs are recomputed.
    saved = traces["dots_saveable"]
    assert flops(saved, recompute=True) == ELEMENTWISE
    assert flops(saved, recompute=True, kind="matmul") == 0


def test_a_scanned_checkpointed_stack_recomputes_each_layer():
    args = arguments()
    plain, checkpointed = (ADAPTER.trace(step(c, None, LAYERS), args) for c in (False, True))
    assert flops(checkpointed, recompute=True) == LAYERS * RECOMPUTED  # 3 × 82,048 = 246,144
    assert flops(checkpointed, recompute=False) == flops(plain)


def test_inference_has_no_backward_and_recomputes_nothing():
    params, tokens, _ = arguments()
    trace = ADAPTER.trace(jax.jit(lambda p, t: jax.checkpoint(block)(p, p["emb"][t])), (params, tokens))
    assert not any({"phase", "recompute"} & set(op.attrs) for op in trace.operations)
