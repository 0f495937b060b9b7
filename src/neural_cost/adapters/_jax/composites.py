"""Library ops written in primitives, recognised as the ops they are.

The catalog's convention is that an op counts by its definition at default parameters, so
the same op counts the same in every framework: *a library op counts as the op*.
``jax.nn.silu`` is the op silu, written in primitives; walked primitive by primitive it
would count JAX's way of writing it (``softplus`` as ``logaddexp``'s ten primitives, an
``elu`` guarded by a second ``where``, a softmax whose ``max`` takes an ``initial``), and
write every intermediate. Recognised, it is one record of the op's kind: one read of its
input, one write of its output — also what XLA fuses it into.

Three ways a library op is recognised, each checked against what the equations compute,
never by a name alone:

- ``JIT_COMPOSITES``: ``jax.nn`` functions that are jitted appear as a ``jit``/``pjit``
  equation named after the function. The name only nominates the call; it folds when
  (1) the call fits the op: one array in, one array out of the same shape and a floating
  dtype, any other input a scalar (a coefficient such as ``alpha``); (2) its body, every
  sub-jaxpr included, is made only of the primitives such an op is written in
  (``body_fits``: elementwise arithmetic, compares, selects, casts, broadcasts, and for
  ``log_softmax`` its two reductions — no ``dot_general``, convolution, gather, scatter,
  loop or custom call); and (3) the body walked primitive by primitive counts within a
  band of the record (``flops_fit``: at least half, at most 4× plus 64 FLOPs). The band
  holds every ``jax.nn`` function with room to spare (walked/folded is 1 to 3: ``mish``
  writes softplus's ten primitives), and scales with the element count, so it does not
  depend on the shape; a user's function that merely shares a name and a signature —
  four matmuls named ``softplus`` — fails (2), and an elementwise one that is a different
  computation of another size fails (3). A call that fails is walked as usual, so it is
  counted exactly as written.
- ``INLINE``: ``jax.nn.gelu`` and ``jax.nn.softmax`` are not jitted (JAX notes a numerics
  difference), so their equations are matched as a sequence: every primitive, every
  operand's origin, the constants that make them the op (gelu's 0.5 and √½, softmax's
  ``initial=-inf``), the broadcast back along the reduced axis, and only when every
  intermediate is used inside the sequence. The dataflow is the definition, so a match is
  the op; no name is involved.
- Flax's norm layers (``flax_norms``): not jitted either; ``flax.linen.intercept_methods``
  tells which scope is which norm layer while the jaxpr is made, and the walker folds that
  scope's equations into one norm record (``walker.Walker``). Only a plain call folds: not
  under a transform. So the forward half of a ``jax.grad`` (or ``vmap``) step walks a
  norm layer's primitives — a training report's forward FLOPs for a LayerNorm are JAX's
  primitives (5L+2 folded in inference, a little more walked), where inference and PyTorch
  count the catalog's; the matmuls, which dominate, are the same either way.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...core.records import Operation
from .table import LowerContext

# jit name → (catalog entry, or "softmax"/"log_softmax" for the softmax kind; why it is that op)
JIT_COMPOSITES: dict[str, tuple[str, str]] = {
    "silu": ("silu", "x·sigmoid(x) (jax.nn.swish is the same function)"),
    "elu": ("elu", "where(x > 0, x, alpha·expm1(where(x > 0, 0, x))): the inner where guards expm1's overflow"),
    "selu": ("selu", "scale·elu(x, alpha) with SELU's constants"),
    "celu": ("celu", "max(x, 0) + alpha·expm1(min(x, 0)/alpha)"),
    "softplus": ("softplus", "logaddexp(x, 0): log(1 + exp(x)) written stably"),
    "log_sigmoid": ("log_sigmoid", "-softplus(-x)"),
    "mish": ("mish", "x·tanh(softplus(x))"),
    "leaky_relu": ("leaky_relu", "where(x >= 0, x, slope·x)"),
    "relu": ("relu", "max(x, 0), inside relu's custom_jvp_call"),
    "relu6": ("relu6", "min(max(x, 0), 6), inside relu6's custom_jvp_call"),
    "hard_tanh": ("hardtanh", "where(x > 1, 1, where(x < -1, -1, x))"),
    "hard_sigmoid": ("hardsigmoid", "relu6(x + 3)/6"),
    "hard_silu": ("hardswish", "x·hard_sigmoid(x) (jax.nn.hard_swish is the same function)"),
    "soft_sign": ("softsign", "x/(|x| + 1)"),
    "log_softmax": ("log_softmax", "shifted = x - max(x); shifted - log(Σ exp(shifted)), along one axis"),
}


def _float(atom: Any) -> bool:
    return str(getattr(atom.aval.dtype, "kind", "")) == "f" or "float" in str(atom.aval.dtype)


def _the_array(invars: Sequence[Any], out: Any) -> Any | None:
    """The one input of out's shape, when every other input is a scalar coefficient."""
    arrays = [v for v in invars if tuple(v.aval.shape) != ()]
    if len(arrays) != 1 or tuple(arrays[0].aval.shape) != tuple(out.aval.shape) or not _float(out):
        return None
    return arrays[0]


def _reduce_axis(body: Any) -> int | None:
    """The one axis of the first reduce_max in a softmax body, or None."""
    for eqn in body.eqns:
        if eqn.primitive.name == "reduce_max":
            axes = tuple(eqn.params["axes"])
            return int(axes[0]) if len(axes) == 1 else None
    return None


#: What the jitted ``jax.nn`` activations are written in (a superset of JAX 0.10's: a later
#: rewrite in other elementwise primitives still folds; anything else is walked).
_ELEMENTWISE = frozenset(
    {
        "abs", "add", "sub", "mul", "div", "neg", "sign", "max", "min", "pow", "integer_pow", "sqrt",
        "rsqrt", "square", "exp", "exp2", "expm1", "log", "log1p", "logistic", "tanh", "erf", "erfc",
        "gt", "ge", "lt", "le", "eq", "ne", "and", "or", "not", "is_finite", "select_n", "clamp",
        "convert_element_type", "broadcast_in_dim", "stop_gradient", "copy", "copy_p",
        "jit", "pjit", "closed_call", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
    }
)  # fmt: skip
#: ``log_softmax`` also reduces along its axis: a max and a sum.
_SOFTMAX_FAMILY = _ELEMENTWISE | {"reduce_max", "reduce_sum", "reshape", "squeeze", "expand_dims"}
#: walked FLOPs of a recognised body, against its record's: at least 1/2, at most 4× + 64.
BAND = (0.5, 4, 64)


def _bodies(eqn: Any) -> list[Any]:
    found = []
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns") and hasattr(inner, "invars"):
                found.append(inner)
    return found


def body_fits(entry: str, body: Any) -> bool:
    """Whether every primitive of ``body``, sub-jaxprs included, is one ``entry``'s op is made of."""
    allowed = _SOFTMAX_FAMILY if entry == "log_softmax" else _ELEMENTWISE
    pending = [body]
    while pending:
        for eqn in pending.pop().eqns:
            if str(eqn.primitive.name) not in allowed:
                return False
            pending += _bodies(eqn)
    return True


def flops_fit(walked: int, folded: int) -> bool:
    """Whether a body walked primitive by primitive counts like the op it is folded into."""
    low, factor, constant = BAND
    return low * folded <= walked <= factor * folded + constant


def jit_composite(eqn: Any, body: Any, ctx: LowerContext) -> Operation | None:
    """One record for a recognised ``jax.nn`` jit call, or None to walk its body."""
    name = eqn.params.get("name")
    found = JIT_COMPOSITES.get(name) if isinstance(name, str) else None
    if found is None or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0]
    x = _the_array(eqn.invars, out)
    if x is None:
        return None
    entry = found[0]
    if not body_fits(entry, body):
        return None
    if entry == "log_softmax":
        axis = _reduce_axis(body)
        if axis is None:
            return None
        return ctx.op(eqn, "softmax", [x], out, attrs={"axis": axis, "log": True}, name=name)
    return ctx.op(eqn, "elementwise", [x], out, attrs={"op": entry}, name=name)


# -- inline sequences (gelu, softmax) --------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One equation of a sequence: its primitive and operands, each ``"x"`` (the op's input),
    a float (a literal of that value, approximately), ``"lit"`` (any literal) or the index of
    an earlier step. An optional step may be absent: references to it then mean its operand."""

    primitive: str
    operands: tuple[Any, ...]
    optional: bool = False


_COMMUTATIVE = frozenset({"mul", "add", "max"})
_SQRT_HALF, _SQRT_2_OVER_PI = math.sqrt(0.5), math.sqrt(2 / math.pi)
# (catalog entry or softmax kind, the steps jax 0.10's jax.nn writes, why it is the op)
INLINE: tuple[tuple[str, tuple[Step, ...], str], ...] = (
    (
        "gelu",
        (
            Step("mul", (0.5, "x")),
            Step("neg", ("x",)),
            Step("mul", (1, _SQRT_HALF)),
            Step("erfc", (2,)),
            Step("mul", (0, 3)),
            Step("copy", (4,), optional=True),  # jnp.array(..., dtype): a copy XLA elides
        ),
        "jax.nn.gelu(approximate=False): 0.5·x·erfc(-x·√½)",
    ),
    (
        "gelu_tanh",
        (
            Step("integer_pow", ("x",)),
            Step("mul", (0.044715, 0)),
            Step("add", ("x", 1)),
            Step("mul", (_SQRT_2_OVER_PI, 2)),
            Step("tanh", (3,)),
            Step("add", (1.0, 4)),
            Step("mul", (0.5, 5)),
            Step("mul", ("x", 6)),
        ),
        "jax.nn.gelu (approximate=True): x·0.5·(1 + tanh(√(2/π)·(x + 0.044715·x³)))",
    ),
    (
        "softmax",
        (
            Step("reduce_max", ("x",)),
            Step("max", (-math.inf, 0), optional=True),  # jnp.max's initial=-inf
            Step("broadcast_in_dim", (1,)),
            Step("stop_gradient", (2,), optional=True),  # the deprecated (default) softmax path
            Step("sub", ("x", 3)),
            Step("exp", (4,)),
            Step("reduce_sum", (5,)),
            Step("broadcast_in_dim", (6,)),
            Step("div", (5, 7)),
        ),
        "jax.nn.softmax: exp(x - max(x)) / Σ exp(x - max(x)), along one axis",
    ),
)
STARTS = frozenset(steps[0].primitive for _, steps, _ in INLINE)


def _variants(steps: tuple[Step, ...]) -> list[tuple[Step, ...]]:
    """Each sequence with every subset of its optional steps removed, references rewired."""
    optional = [i for i, s in enumerate(steps) if s.optional]
    found = []
    for mask in range(1 << len(optional)):
        dropped = {optional[b] for b in range(len(optional)) if mask >> b & 1}
        kept = [i for i in range(len(steps)) if i not in dropped]
        index = {old: new for new, old in enumerate(kept)}

        def resolve(ref: Any, dropped: set[int] = dropped, index: dict[int, int] = index) -> Any:
            while isinstance(ref, int) and ref in dropped:
                ref = next(r for r in steps[ref].operands if isinstance(r, (int, str)) and r != "lit")
            return index[ref] if isinstance(ref, int) else ref

        found.append(tuple(Step(steps[i].primitive, tuple(resolve(r) for r in steps[i].operands)) for i in kept))
    return sorted(found, key=len, reverse=True)


_PATTERNS = [(entry, variant, why) for entry, steps, why in INLINE for variant in _variants(steps)]


def _operand_fits(atom: Any, spec: Any, x: Any, outs: list[Any]) -> bool:
    value = getattr(atom, "val", None)
    if isinstance(spec, str):
        return atom is x if spec == "x" else value is not None
    if isinstance(spec, float):
        try:
            return (
                value is not None
                and getattr(value, "shape", ()) == ()
                and math.isclose(float(value), spec, rel_tol=1e-6)
            )
        except (TypeError, ValueError):
            return False
    return atom is outs[spec]


def _step_fits(eqn: Any, step: Step, x: Any, outs: list[Any]) -> bool:
    if eqn.primitive.name != step.primitive or len(eqn.invars) != len(step.operands) or len(eqn.outvars) != 1:
        return False
    atoms = list(eqn.invars)
    if all(_operand_fits(a, s, x, outs) for a, s in zip(atoms, step.operands, strict=True)):
        return True
    return step.primitive in _COMMUTATIVE and all(
        _operand_fits(a, s, x, outs) for a, s in zip(atoms[::-1], step.operands, strict=True)
    )


def match_inline(eqns: Sequence[Any], start: int, uses: Callable[[], dict[Any, int]]) -> tuple[str, int, str] | None:
    """(entry, equations taken, why) when ``eqns[start:]`` begins a recognised sequence whose
    intermediates are used only inside it; ``uses()`` counts each variable's uses in the jaxpr."""
    first = eqns[start]
    candidates = [a for a in first.invars if getattr(a, "val", None) is None]
    for entry, steps, why in _PATTERNS:
        if start + len(steps) > len(eqns) or steps[0].primitive != first.primitive.name:
            continue
        for candidate in candidates:
            outs: list[Any] = []
            for offset, step in enumerate(steps):
                eqn = eqns[start + offset]
                if not _step_fits(eqn, step, candidate, outs):
                    break
                outs.append(eqn.outvars[0])
            else:
                if _closed(steps, outs, uses()) and tuple(outs[-1].aval.shape) == tuple(candidate.aval.shape):
                    return entry, len(steps), why
    return None


def _closed(steps: tuple[Step, ...], outs: list[Any], uses: dict[Any, int]) -> bool:
    """Every intermediate is used only by later steps (the result may be used anywhere)."""
    inside: dict[int, int] = {}
    for step in steps:
        for ref in step.operands:
            if isinstance(ref, int):
                inside[ref] = inside.get(ref, 0) + 1
    return all(uses.get(outs[i], 0) == inside.get(i, 0) for i in range(len(outs) - 1))


def inline_record(eqns: Sequence[Any], start: int, taken: int, entry: str, ctx: LowerContext) -> Operation:
    first, last = eqns[start], eqns[start + taken - 1]
    x = next(a for a in first.invars if getattr(a, "val", None) is None)
    if entry == "softmax":
        axes = tuple(first.params["axes"])
        summed = next(e for e in eqns[start : start + taken] if e.primitive.name == "reduce_sum")
        if len(axes) != 1 or tuple(summed.params["axes"]) != axes:
            raise ValueError(f"max over {axes}, sum over {summed.params['axes']}: not one softmax axis")
        rank = len(x.aval.shape)
        kept = tuple(d for d in range(rank) if d not in axes)
        for step in eqns[start : start + taken]:  # each broadcast puts the reduced value back along its axis
            if step.primitive.name == "broadcast_in_dim" and (
                tuple(step.params["broadcast_dimensions"]) != kept or len(step.outvars[0].aval.shape) != rank
            ):
                raise ValueError("a broadcast that does not restore the reduced axis: not a softmax")
        return ctx.op(first, "softmax", [x], last.outvars[0], attrs={"axis": int(axes[0]), "log": False}, name=entry)
    return ctx.op(first, "elementwise", [x], last.outvars[0], attrs={"op": entry}, name=entry)


def use_counts(jaxpr: Any) -> dict[Any, int]:
    counts: dict[Any, int] = {}
    for eqn in jaxpr.eqns:
        for atom in eqn.invars:
            if getattr(atom, "val", None) is None:
                counts[atom] = counts.get(atom, 0) + 1
    for atom in jaxpr.outvars:
        counts[atom] = counts.get(atom, 0) + 1
    return counts


# -- Flax norm layers ------------------------------------------------------------------------


@dataclass(frozen=True)
class NormCall:
    """One call of a Flax norm layer: its scope path, the record's kind and attrs, and the
    shapes and dtypes of the record's inputs (x first, in the rule's layout) and output."""

    kind: str
    attrs: dict[str, Any]
    inputs: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    output: tuple[int, ...]
    dtype: str


def _norm_call(module: Any, linen: Any, x: Any, y: Any) -> NormCall | None:
    """The record a Flax norm layer's call is, or None when its form is not one rule's."""
    import numpy as np

    from ...core.dtypes import canonical_dtype

    shape = tuple(int(d) for d in x.shape)
    if tuple(int(d) for d in y.shape) != shape or not shape:
        return None
    dtype = canonical_dtype(np.dtype(x.dtype).name, "flax input")
    out_dtype = canonical_dtype(np.dtype(y.dtype).name, "flax output")
    param = canonical_dtype(np.dtype(getattr(module, "param_dtype", x.dtype)).name, "flax param_dtype")
    rank = len(shape)

    def axes(value: Any) -> tuple[int, ...]:
        values = (value,) if isinstance(value, int) else tuple(value)
        return tuple(sorted(int(a) % rank for a in values))

    if isinstance(module, (linen.LayerNorm, linen.RMSNorm)):
        reduced = axes(module.reduction_axes)
        if reduced != axes(module.feature_axes) or reduced != tuple(range(rank - len(reduced), rank)):
            return None
        features = shape[-len(reduced) :]
        rms = isinstance(module, linen.RMSNorm)
        affine = [module.use_scale] + ([] if rms else [module.use_bias])
        extra = tuple(features for used in affine if used)
        kind = "rmsnorm" if rms else "layernorm"
        return NormCall(
            kind, {"normalized_dims": len(reduced)}, (shape, *extra), (dtype,) + (param,) * len(extra), shape, out_dtype
        )
    channels_last = (shape[0], shape[-1], *shape[1:-1])
    if isinstance(module, linen.GroupNorm):
        if rank < 2 or tuple(module.reduction_axes or ()) not in ((), None) or module.group_size is not None:
            return None
        extra = tuple((shape[-1],) for used in (module.use_scale, module.use_bias) if used)
        attrs = {"groups": int(module.num_groups)}
        return NormCall(
            "groupnorm", attrs, (channels_last, *extra), (dtype,) + (param,) * len(extra), channels_last, out_dtype
        )
    if isinstance(module, linen.BatchNorm):
        if rank < 2 or axes(module.axis) != (rank - 1,) or module.use_scale != module.use_bias:
            return None
        per_channel = 2 + (2 if module.use_scale else 0)  # running mean, variance[, scale, bias]
        inputs = (channels_last, *((shape[-1],),) * per_channel)
        attrs = {"affine": bool(module.use_scale), "training": False}
        return NormCall("batchnorm", attrs, inputs, (dtype,) + (param,) * per_channel, channels_last, out_dtype)
    return None


@contextmanager
def flax_norms(found: dict[str, NormCall | None], scope_path: Callable[[Any], str]) -> Iterator[None]:
    """While the jaxpr is made, note each Flax norm layer's call by its scope path (a name
    stack as ``scope_path`` reads it, the walker's reading) in ``found`` (None where it cannot
    fold: called twice, under a transform, in training mode, with a child module). Does
    nothing, and imports nothing, when the program does not use Flax."""
    linen = sys.modules.get("flax.linen")
    if linen is None or not hasattr(linen, "intercept_methods"):
        yield
        return
    from jax._src import source_info_util

    norms = tuple(getattr(linen, n) for n in ("LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm") if hasattr(linen, n))
    paths: list[str] = []

    def interceptor(method: Any, args: Any, kwargs: Any, context: Any) -> Any:
        stack = source_info_util.current_name_stack()
        path = scope_path(stack)
        paths.append(path)
        result = method(*args, **kwargs)
        module = context.module
        if context.method_name != "__call__" or not isinstance(module, norms):
            return result
        transformed = any(type(e).__name__ == "Transform" for e in getattr(stack, "stack", ()))
        call = None
        plain = all(v is None for k, v in kwargs.items() if k != "use_running_average")  # no mask
        if plain and not transformed and len(args) == 1 and hasattr(args[0], "shape") and hasattr(result, "shape"):
            running = kwargs.get("use_running_average", getattr(module, "use_running_average", True))
            if not isinstance(module, linen.BatchNorm) or running is True:
                try:
                    call = _norm_call(module, linen, args[0], result)
                except Exception:  # a form we cannot read: its equations are walked as usual
                    call = None
        found[path] = None if path in found else call
        return result

    with linen.intercept_methods(interceptor):
        yield
    for path in list(found):  # a norm with a child module's scope inside it is walked as usual
        if any(p.startswith(path + "/") for p in paths):
            found[path] = None
