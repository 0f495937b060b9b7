"""Table entries for TensorFlow's random-number ops (stateful and stateless).

The family keeps the PyTorch table's name, ``ops_random_optim``, so the same family has the same
file in every adapter. Here it holds only random numbers: TensorFlow's fused optimizer ops
(``ResourceApplyAdam``...) are not in the table, so a graph that runs one counts it as
unmodeled, by name. Each builder turns one graph op into an ``rng`` record; the arithmetic
lives in ``neural_cost.costs``. The convention:

- Random ops are ``rng`` records with TensorFlow's Philox4x32-10, one 32-bit draw per
  element at least (64 for 64-bit types; half types also consume a 32-bit draw). Shaping
  the bits, per element: uniform 3 (mantissa bits | exponent, then - 1.0: shift, or,
  subtract), integer uniform 2 (modulo, add), normal 10 and 2 transcendentals (Box-Muller as
  in the torch table), truncated normal 11 and 2 (one more range compare; the ~4.6% of draws
  redrawn are not counted). ``StatelessRandomGetKeyCounter`` runs one Philox block to turn
  the seed into a key and counter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.records import Operation
from .table import TfContext, lowers

# -- random ----------------------------------------------------------------------------------

_RNG_SHAPING: dict[str, tuple[int, int]] = {
    # op type: (FLOPs, transcendentals) per element turning the bits into values
    "RandomUniform": (3, 0),
    "StatelessRandomUniform": (3, 0),
    "StatelessRandomUniformV2": (3, 0),
    "RandomUniformInt": (2, 0),
    "StatelessRandomUniformInt": (2, 0),
    "StatelessRandomUniformIntV2": (2, 0),
    "StatelessRandomUniformFullInt": (0, 0),
    "StatelessRandomUniformFullIntV2": (0, 0),
    "RandomStandardNormal": (10, 2),
    "StatelessRandomNormal": (10, 2),
    "StatelessRandomNormalV2": (10, 2),
    "TruncatedNormal": (11, 2),
    "StatelessTruncatedNormal": (11, 2),
    "StatelessTruncatedNormalV2": (11, 2),
}


@lowers(*_RNG_SHAPING)
def _random(op: Any, ctx: TfContext) -> Sequence[Operation]:
    flops, transcendentals = _RNG_SHAPING[op.type]
    out = op.outputs[0]
    attrs = {
        "generator": "philox4x32-10",
        "bits_per_element": max(32, out.dtype.size * 8),
        "flops_per_element": flops,
        "transcendentals_per_element": transcendentals,
    }
    return [ctx.op(op, "rng", (), attrs=attrs)]


@lowers("StatelessRandomGetKeyCounter")
def _key_counter(op: Any, ctx: TfContext) -> Sequence[Operation]:
    """One Philox block (128 bits) hashes the seed into the key (1 word) and counter (2 words)."""
    attrs = {"generator": "philox4x32-10", "bits_per_element": 128}
    return [ctx.op(op, "rng", (), attrs=attrs, extra_outputs=op.outputs[1:2])]
