"""Table entries for JAX's dense linear algebra and Fourier transforms.

Each builder turns one equation into a ``decomposition`` or ``fft`` record (conventions in
``neural_cost.costs.decompositions`` and ``.spectral``): the first result is the record's
output, the others (pivots, permutations, values, vectors) its extra outputs, each written
once. ``jax.image.resize`` needs no entry: it lowers to ``dot_general`` with weight
matrices (linear, cubic, lanczos) or a ``gather`` (nearest), already in the table.
"""

from __future__ import annotations

from typing import Any

from .common import Ops
from .table import LowerContext, lowers


def _factor(eqn: Any, ctx: LowerContext, routine: str, **attrs: Any) -> Ops:
    outputs = eqn.outvars
    return [
        ctx.op(
            eqn,
            "decomposition",
            output=outputs[0],
            attrs={"routine": routine, **attrs},
            extra_outputs=outputs[1:],
        )
    ]


@lowers("lu")
def _lu(eqn: Any, ctx: LowerContext) -> Ops:
    """getrf: the packed LU, the pivots and the permutation they make."""
    return _factor(eqn, ctx, "lu")


@lowers("cholesky")
def _cholesky(eqn: Any, ctx: LowerContext) -> Ops:
    return _factor(eqn, ctx, "cholesky")


@lowers("qr")
def _qr(eqn: Any, ctx: LowerContext) -> Ops:
    """Q and R: the factorization and Q formed, full (m × m) with ``full_matrices``."""
    return _factor(eqn, ctx, "qr", vectors=True, full_matrices=bool(eqn.params.get("full_matrices", False)))


@lowers("geqrf")
def _geqrf(eqn: Any, ctx: LowerContext) -> Ops:
    """Householder QR only: the packed reflectors and their scales τ."""
    return _factor(eqn, ctx, "qr")


@lowers("householder_product")
def _householder(eqn: Any, ctx: LowerContext) -> Ops:
    """(a, τ): Q formed from the reflectors (orgqr)."""
    return _factor(eqn, ctx, "householder_product")


@lowers("svd")
def _svd(eqn: Any, ctx: LowerContext) -> Ops:
    """Values, then U and Vᵀ with ``compute_uv`` (full with ``full_matrices``). A
    ``subset_by_index`` is counted as the whole decomposition (an upper bound)."""
    vectors = bool(eqn.params.get("compute_uv", True))
    full = vectors and bool(eqn.params.get("full_matrices", True))
    return _factor(eqn, ctx, "svd", vectors=vectors, full_matrices=full)


@lowers("eigh")
def _eigh(eqn: Any, ctx: LowerContext) -> Ops:
    """The primitive always returns the eigenvectors (``eigvalsh`` drops them after)."""
    return _factor(eqn, ctx, "eigh", vectors=True)


@lowers("eig")
def _eig(eqn: Any, ctx: LowerContext) -> Ops:
    p = eqn.params
    vectors = bool(p.get("compute_left_eigenvectors") or p.get("compute_right_eigenvectors"))
    return _factor(eqn, ctx, "eig", vectors=vectors)


@lowers("triangular_solve")
def _triangular_solve(eqn: Any, ctx: LowerContext) -> Ops:
    """(a, b): a triangular solve from the left (``left_side``) or the right."""
    return _factor(eqn, ctx, "triangular_solve", left=bool(eqn.params.get("left_side", False)))


@lowers("lu_pivots_to_permutation")
def _pivots(eqn: Any, ctx: LowerContext) -> Ops:
    """The pivots' row swaps applied to an iota: a ``copy`` (integers moved, no arithmetic)."""
    return [ctx.op(eqn, "copy")]


#: lax.FftType by name → the record's transform; XLA's inverse transforms scale by 1/N.
_FFT_TYPES = {"FFT": ("c2c", False), "IFFT": ("c2c", True), "RFFT": ("r2c", False), "IRFFT": ("c2r", True)}


@lowers("fft")
def _fft(eqn: Any, ctx: LowerContext) -> Ops:
    """``fft`` over the trailing ``fft_lengths`` dims (the real signal's for IRFFT)."""
    fft_type = eqn.params["fft_type"]
    transform, scaled = _FFT_TYPES[getattr(fft_type, "name", str(fft_type).rsplit(".", 1)[-1])]
    lengths = tuple(int(n) for n in eqn.params["fft_lengths"])
    return [ctx.op(eqn, "fft", attrs={"lengths": lengths, "transform": transform, "scaled": scaled})]
