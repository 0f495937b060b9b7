"""Contractions: linear, matmul (numpy or dot_general semantics), attention."""

from __future__ import annotations

import math
from typing import Annotated, Literal, get_args

from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation, Shape
from .intmath import floor_sum
from .registry import (
    Expect,
    NonNegative,
    Positive,
    broadcasts_to,
    cost_rule,
    default_cost,
    expect_inputs,
    expect_output,
    where,
)


@cost_rule(
    "linear", "x (..., K) @ W (K, N) [or (N, K) with weight_layout='out_in']: 2·rows·K·N; bias is a separate record"
)
def linear(op: Operation, *, weight_layout: Literal["in_out", "out_in"] = "in_out") -> OpCost:
    """``weight_layout``: 'in_out' is a (K, N) weight, 'out_in' an (N, K) one (PyTorch's)."""
    expect_inputs(op, 2, 2, "x, weight; add the bias as its own elementwise record")
    x, weight = op.inputs
    if len(weight) != 2 or len(x) < 1:
        raise ShapeError(f"{where(op)} needs x (..., K) and a 2-D weight; got x {x}, weight {weight}")
    k, n = weight if weight_layout == "in_out" else weight[::-1]
    if x[-1] != k:
        raise ShapeError(
            f"{where(op)}: x's last dimension {x[-1]} does not match the weight's input size {k} "
            f"(weight {weight}, weight_layout={weight_layout!r})"
        )
    expect_output(op, (*x[:-1], n), "x's leading dims then the weight's output size")
    rows = math.prod(x[:-1])
    return default_cost(op, 2 * rows * k * n)


Dims = tuple[int, ...]
DimensionNumbers = Annotated[
    tuple[tuple[Dims, Dims], tuple[Dims, Dims]],
    Expect("((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), tuples of ints as in lax.dot_general"),
]


def _dot_general(op: Operation, lhs: Shape, rhs: Shape, numbers: DimensionNumbers) -> tuple[Shape, int]:
    (lc, rc), (lb, rb) = numbers
    for dims, shape, side in ((lc, lhs, "lhs"), (lb, lhs, "lhs"), (rc, rhs, "rhs"), (rb, rhs, "rhs")):
        if any(not 0 <= d < len(shape) for d in dims):
            raise ShapeError(f"{where(op)} dimension_numbers name a {side} dimension outside its shape {shape}")
    repeated = any(len(set(dims)) != len(dims) for dims in (lc, rc, lb, rb))
    if repeated or len(lc) != len(rc) or len(lb) != len(rb) or set(lc) & set(lb) or set(rc) & set(rb):
        raise ShapeError(f"{where(op)} dimension_numbers are inconsistent: {numbers}")
    for a, b in zip(lc, rc, strict=True):
        if lhs[a] != rhs[b]:
            raise ShapeError(
                f"{where(op)}: contracting sizes disagree: lhs dim {a} is {lhs[a]}, rhs dim {b} is {rhs[b]} "
                f"(lhs {lhs}, rhs {rhs})"
            )
    for a, b in zip(lb, rb, strict=True):
        if lhs[a] != rhs[b]:
            raise ShapeError(f"{where(op)}: batch sizes disagree: lhs dim {a} is {lhs[a]}, rhs dim {b} is {rhs[b]}")
    lhs_free = tuple(s for i, s in enumerate(lhs) if i not in lc and i not in lb)
    rhs_free = tuple(s for i, s in enumerate(rhs) if i not in rc and i not in rb)
    out = tuple(lhs[d] for d in lb) + lhs_free + rhs_free
    return out, math.prod(lhs[d] for d in lc)


def _numpy_matmul(op: Operation, lhs: Shape, rhs: Shape) -> tuple[Shape, int]:
    if not lhs or not rhs:
        raise ShapeError(f"{where(op)}: matmul needs inputs of rank >= 1, got {lhs} and {rhs}")
    a = (1, *lhs) if len(lhs) == 1 else lhs
    b = (*rhs, 1) if len(rhs) == 1 else rhs
    if a[-1] != b[-2]:
        raise ShapeError(f"{where(op)}: contracting sizes disagree: {lhs} @ {rhs} contracts {a[-1]} with {b[-2]}")
    batch_a, batch_b = a[:-2], b[:-2]
    rank = max(len(batch_a), len(batch_b))
    batch = []
    for i in range(rank):
        da = batch_a[i - rank + len(batch_a)] if i - rank + len(batch_a) >= 0 else 1
        db = batch_b[i - rank + len(batch_b)] if i - rank + len(batch_b) >= 0 else 1
        if da != db and 1 not in (da, db):
            raise ShapeError(f"{where(op)}: batch dims of {lhs} and {rhs} do not broadcast ({da} vs {db})")
        batch.append(db if da == 1 else da)
    out = tuple(batch) + ((a[-2],) if len(lhs) > 1 else ()) + ((b[-1],) if len(rhs) > 1 else ())
    return out, a[-1]


@cost_rule(
    "matmul",
    "2 · output elements · contracted size; numpy semantics, or lax.dot_general's dimension_numbers when given",
)
def matmul(op: Operation, *, dimension_numbers: DimensionNumbers | None = None) -> OpCost:
    expect_inputs(op, 2, 2, "lhs, rhs")
    lhs, rhs = op.inputs
    if dimension_numbers is not None:
        out, contracted = _dot_general(op, lhs, rhs, dimension_numbers)
        why = "dot_general: batch dims, lhs free dims, rhs free dims"
    else:
        out, contracted = _numpy_matmul(op, lhs, rhs)
        why = "numpy matmul: broadcast batch dims, then M and N"
    expect_output(op, out, why)
    return default_cost(op, 2 * math.prod(out) * contracted)


GroupDims = Annotated[
    tuple[Dims, Dims],
    Expect("(lhs group dims, rhs group dims): the dims that index the groups, tuples of ints, no part of the product"),
]


def _without(shape: Shape, group: Dims) -> tuple[Shape, dict[int, int]]:
    """``shape`` less its ``group`` dims, and where each kept dim went."""
    kept = [d for d in range(len(shape)) if d not in group]
    return tuple(shape[d] for d in kept), {d: i for i, d in enumerate(kept)}


@cost_rule(
    "grouped_matmul",
    "a product per group (a mixture of experts' experts: lax.ragged_dot, PyTorch's _grouped_mm), lhs, rhs[, group "
    "sizes or offsets (..., G)]: attrs['group_dims'] (lhs dims, rhs dims; default the rhs's first) index the groups "
    "and are no part of the product, which is lax.dot_general's attrs['dimension_numbers'] over the other dims "
    "(default (M, K) · (K, N)); attrs['ragged_contracting']: the contracted dim is split among the groups, one output "
    "per group (a leading G); 2 · output elements (less that G) · contracted size — every index of the ragged dim in "
    "one group, as a router that assigns every token makes them (groups that cover less do less work)",
)
def grouped_matmul(
    op: Operation,
    *,
    dimension_numbers: DimensionNumbers = (((1,), (1,)), ((), ())),
    group_dims: GroupDims = ((), (0,)),
    ragged_contracting: bool = False,
) -> OpCost:
    expect_inputs(op, 2, 3, "lhs, rhs, group sizes or offsets")
    lhs, rhs = op.inputs[:2]
    (lc, rc), (lb, rb) = dimension_numbers
    named = ((lg := group_dims[0], lhs, lc + lb, "lhs"), (rg := group_dims[1], rhs, rc + rb, "rhs"))
    for group, shape, used, side in named:
        if any(not 0 <= d < len(shape) for d in group) or len(set(group)) != len(group) or set(group) & set(used):
            raise ShapeError(
                f"{where(op)}: group_dims {group_dims} must name distinct {side} dims of {shape} that are neither "
                f"contracted nor batch dims"
            )
    groups = op.output[0] if ragged_contracting and op.output else None
    sizes = {shape[d] for group, shape, _, _ in named for d in group} | (
        {op.inputs[2][-1]} if len(op.inputs) == 3 and op.inputs[2] else set()
    )
    if groups is not None:
        sizes.add(groups)
    if len(sizes) > 1:
        raise ShapeError(f"{where(op)}: the group counts disagree: {sorted(sizes)} (group dims, group sizes, output)")
    (lhs_dense, lmap), (rhs_dense, rmap) = _without(lhs, lg), _without(rhs, rg)
    renumbered = (
        (tuple(lmap[d] for d in lc), tuple(rmap[d] for d in rc)),
        (tuple(lmap[d] for d in lb), tuple(rmap[d] for d in rb)),
    )
    out, contracted = _dot_general(op, lhs_dense, rhs_dense, renumbered)
    leading = (groups,) if groups is not None else ()
    expect_output(op, (*leading, *out), "a leading group dim (ragged_contracting), batch dims, lhs free, rhs free")
    return default_cost(op, 2 * math.prod(out) * contracted)


CausalAlignment = Literal["top_left", "bottom_right"]
CAUSAL_ALIGNMENTS: tuple[str, ...] = get_args(CausalAlignment)


def _tile_end(keys: int, k_len: int, kv_block: int) -> int:
    """Keys up to the end of the tile holding key ``keys`` - 1 (0 for none, at most Sk)."""
    keys = min(max(keys, 0), k_len)
    return min(-(-keys // kv_block) * kv_block, k_len)


def _tiled_causal_pairs(q_len: int, k_len: int, q_block: int, kv_block: int, alignment: str) -> int:
    """Σ over query blocks of rows · keys up to the end of the last tile the block reaches, in
    closed form (no loop over the Sq/q_block blocks: a saved report may hold any length).

    Full block u (1..F, F = ⌊Sq/q_block⌋) reaches keys u·q_block + offset. Blocks that reach no
    key add 0; blocks reaching past ``top`` (the start of the last key tile) add Sk each; the
    blocks between add kv_block·⌈keys/kv_block⌉, an arithmetic floor sum. A last, shorter block
    (Sq mod q_block rows) reaches Sq + offset keys."""
    offset = k_len - q_len if alignment == "bottom_right" else 0
    full, rest = divmod(q_len, q_block)
    top = (-(-k_len // kv_block) - 1) * kv_block
    first = max(1, -offset // q_block + 1)  # the first block that reaches a key
    whole = min(full + 1, max(first, (top - offset) // q_block + 1))  # the first that reaches the last tile
    tiles = 0
    if whole > first:  # Σ_{first <= u < whole} ⌈(u·q_block + offset)/kv_block⌉
        tiles = kv_block * floor_sum(whole - first, kv_block, q_block, first * q_block + offset + kv_block - 1)
    total = q_block * (tiles + (full + 1 - whole) * k_len)
    return total + rest * _tile_end(q_len + offset, k_len, kv_block)


def causal_pairs(q_len: int, k_len: int, alignment: str = "top_left", blocks: tuple[int, int] | None = None) -> int:
    """Query-key pairs a causal mask keeps.

    top_left (PyTorch's ``is_causal``, ``torch.tril``): query i sees keys 0..i, so
    Σ_{i<Sq} min(i+1, Sk). bottom_right (FlashAttention >= 2.1, KV-cache decoding): query i
    sees keys 0..i+(Sk-Sq), so Σ_{i<Sq} clamp(i+1+Sk-Sq, 0, Sk). They differ only when Sq != Sk.

    ``blocks`` (q_block, kv_block): a kernel that skips masked tiles, not pairs, computes
    every pair of each tile the mask touches: per block of queries starting at m (rows r),
    the key tiles up to the last key its last query sees, whole:
    Σ_m r·min(⌈keys(m + r)/kv_block⌉·kv_block, Sk). Block sizes larger than the lengths are
    clamped to them, as PyTorch's CPU flash kernel does.
    """
    if blocks is not None:
        if q_len == 0 or k_len == 0:
            return 0
        return _tiled_causal_pairs(q_len, k_len, min(blocks[0], q_len), min(blocks[1], k_len), alignment)
    if alignment == "top_left":
        if q_len <= k_len:
            return q_len * (q_len + 1) // 2
        return k_len * (k_len + 1) // 2 + (q_len - k_len) * k_len
    offset = k_len - q_len
    if offset >= 0:  # terms i+1+offset run from offset+1 to Sk
        return k_len * (k_len + 1) // 2 - offset * (offset + 1) // 2
    return k_len * (k_len + 1) // 2  # the first Sq-Sk queries see nothing


@cost_rule(
    "attention",
    "q (B,Hq,Sq,D), k (B,Hkv,Sk,D), v (B,Hkv,Sk,Dv): 2·B·Hq·pairs·(D+Dv); causal kernels that skip "
    "masked blocks execute Σ min(i+1,Sk) pairs (attrs['causal_alignment']='bottom_right': Σ clamp(i+1+Sk-Sq, 0, Sk)), "
    "or with attrs['causal_blocks']=(q_block, kv_block) every pair of the tiles the mask touches; "
    "plus per executed pair 1 scale multiply and softmax's 5L-2 per query row of L executed keys "
    "(pointwise softmax); dense_flops is FlopCounterMode's matmul-only 2·B·Hq·Sq·Sk·(D+Dv)",
)
def attention(
    op: Operation,
    *,
    causal: bool = False,
    skips_masked: bool = False,
    causal_alignment: CausalAlignment = "top_left",
    causal_blocks: tuple[Positive, Positive] | None = None,
    window: tuple[int, ...] | None = None,
    sliding_window_length: NonNegative | None = None,
    dropout_p: float = 0.0,
    varlen_upper_bound: bool = False,
) -> OpCost:
    """Scaled dot-product attention as one fused kernel.

    ``flops`` = matmuls + scale + softmax over executed pairs: the two matmuls (scores =
    q·kᵀ, out = p·v), one multiply per pair for the scale, and the ``softmax`` rule's 5L-2 per
    query row of L executed keys (a row that executes no key costs nothing) — what the kernel
    runs, so a fused record counts what its decomposition (einsum, scale, softmax, einsum)
    counts op by op; the L exponentials per row are ``transcendentals``. ``dense_flops`` =
    FlopCounterMode's dense matmul figure (all Sq·Sk pairs, no scale or softmax). Traffic is the
    fused kernel's: q, k, v (and a mask, if given as a fourth input) read once, the output
    written once; the score matrix never reaches memory. A decomposed (math) attention is
    a chain of matmul/softmax records instead.

    ``window`` / ``sliding_window_length`` (a local attention window), ``dropout_p`` and
    ``varlen_upper_bound`` (variable-length batches counted at their padded length) are kept
    for readers: the count covers every pair the causal mask keeps (an upper bound with a
    window) and leaves dropout's random numbers out.
    """
    expect_inputs(op, 3, 4, "q, k, v[, mask]")
    q, k, v = op.inputs[:3]
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        raise ShapeError(f"{where(op)} needs q, k, v as (batch, heads, sequence, head_dim); got {q}, {k}, {v}")
    batch, q_heads, q_len, head_dim = q
    if k[0] != batch or v[0] != batch:
        raise ShapeError(f"{where(op)}: batch sizes of q {q}, k {k}, v {v} differ")
    kv_heads, k_len = k[1], k[2]
    if v[1] != kv_heads or v[2] != k_len:
        raise ShapeError(f"{where(op)}: k {k} and v {v} must share heads and sequence length")
    if k[3] != head_dim:
        raise ShapeError(f"{where(op)}: q's head_dim {head_dim} differs from k's {k[3]}")
    if kv_heads == 0 or q_heads % kv_heads:
        raise ShapeError(
            f"{where(op)}: {q_heads} query heads cannot share {kv_heads} key/value heads (grouped-query attention "
            f"needs query heads to be a multiple of key/value heads)"
        )
    value_dim = v[3]
    expect_output(op, (batch, q_heads, q_len, value_dim), "(batch, query heads, query length, v's head_dim)")
    if len(op.inputs) == 4:  # its bytes are read, so its shape must be one the kernel could read
        scores = (batch, q_heads, q_len, k_len)
        if not broadcasts_to(op.inputs[3], scores):
            raise ShapeError(f"{where(op)}: mask {op.inputs[3]} does not broadcast to the scores {scores}")
    dense_pairs = q_len * k_len
    skipping = causal and skips_masked
    pairs = causal_pairs(q_len, k_len, causal_alignment, causal_blocks) if skipping else dense_pairs
    rows = _rows_with_keys(q_len, k_len, causal_alignment, causal_blocks) if skipping else (q_len if k_len else 0)
    per_pair = 2 * (head_dim + value_dim)
    heads = batch * q_heads
    # matmuls + 1 scale multiply per pair + softmax's Σ(5L-2) over rows = pairs·(per_pair+6) - 2·rows
    flops = heads * (pairs * (per_pair + 6) - 2 * rows)
    return default_cost(op, flops, heads * pairs, dense_flops=heads * dense_pairs * per_pair)


def _rows_with_keys(q_len: int, k_len: int, alignment: str, blocks: tuple[int, int] | None) -> int:
    """Query rows a causal kernel runs a softmax over (those executing at least one key).
    top_left: every row sees key 0. bottom_right: row i sees i+1+Sk-Sq keys, so min(Sq, Sk)
    rows; with tiles, a whole query block runs once any of its rows reaches a key, so only
    the leading blocks that reach none (⌊(Sq-Sk)/q_block⌋ of them) are skipped."""
    if q_len == 0 or k_len == 0:
        return 0
    if alignment == "top_left":
        return q_len
    if blocks is None:
        return min(q_len, k_len)
    q_block = min(blocks[0], q_len)
    return q_len - max(0, q_len - k_len) // q_block * q_block
