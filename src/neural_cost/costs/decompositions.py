"""Dense linear algebra: factorizations, eigen- and singular-value decompositions, solves.

Counts are the standard leading-order operation counts LAPACK's routines are benchmarked
with (LAPACK Working Note 41, "Installation Guide for LAPACK", appendix C; Golub & Van
Loan, *Matrix Computations*, 3rd ed., §3.2, §4.2, §5.2 and table 5.4.1 of §5.4.5), for an
(m × n) matrix A, × the batch (the product of A's leading dims):

- lu (getrf): m·n² - n³/3 for m ≥ n (else n·m² - m³/3); 2n³/3 square.
- cholesky (potrf): n³/3.
- qr (geqrf, Householder): 2mn² - 2n³/3 (m ≥ n; else 2nm² - 2m³/3); 4n³/3 square. With Q
  formed (attrs['vectors']; orgqr, k = min(m, n) reflectors): + 4·m·q·k - 2(m+q)·k² + 4k³/3,
  q = n columns for a reduced Q, m for a complete one (attrs['full_matrices']).
- householder_product (orgqr): the Q-forming term above for A (m × n) and k reflectors, the
  second input's last dim.
- svd (Golub–Reinsch, table 5.4.1), m ≥ n (else transposed): values only 4mn² - 4n³/3; with
  thin U (m × n) and V 14mn² + 8n³; with full U (m × m) and V 4m²n + 8mn² + 9n³.
- eigh (symmetric: tridiagonal reduction then QR, §8.3): values 4n³/3, with vectors 9n³.
- eig (general: Hessenberg reduction then the QR algorithm, §7.5.6): values 10n³, with
  vectors 25n³.
- triangular_solve (trsm), A (n × n), B with k right-hand sides: n²·k.
- lu_solve (getrs, given the factors): 2·n²·k.
- solve (gesv): LU + two triangular solves, 2n³/3 + 2n²k.
- inverse (getrf + getri): 2n³.
- det: LU + n-1 multiplies of the diagonal; slogdet: LU + n logs (transcendental) + n-1 adds.

Fractions are rounded up. Known inaccuracies: the counts are leading-order (LAWN 41 adds
O(n²) terms); the SVD and eigen counts assume a fixed number of QR sweeps (iterative: the
executed count depends on the values; GVL's rows disagree by n³ where they meet, thin and
full U at m = n); divide-and-conquer and Jacobi drivers (gesdd, syevd, GPU solvers) do a
different amount; complex matrices are counted as if real (a complex multiply-add is 8 real
FLOPs, not 2: about 4× under). Traffic: every input read once, every result written once —
the unfused floor of blocked algorithms that sweep the matrix O(n / block) times.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from ..core.errors import ShapeError
from ..core.kinds import OpCost
from ..core.records import Operation, Shape
from .registry import cost_rule, default_cost, expect_inputs, where

Routine = Literal[
    "lu",
    "cholesky",
    "qr",
    "householder_product",
    "svd",
    "eigh",
    "eig",
    "triangular_solve",
    "lu_solve",
    "solve",
    "inverse",
    "det",
    "slogdet",
]
_SQUARE = frozenset({"cholesky", "eigh", "eig", "triangular_solve", "lu_solve", "solve", "inverse", "det", "slogdet"})
_SOLVES = frozenset({"triangular_solve", "lu_solve", "solve"})


def _up(value: Fraction) -> int:
    return math.ceil(value)


def lu_flops(m: int, n: int) -> Fraction:
    long, short = max(m, n), min(m, n)
    return Fraction(3 * long * short * short - short**3, 3)


def qr_flops(m: int, n: int) -> Fraction:
    long, short = max(m, n), min(m, n)
    return Fraction(6 * long * short * short - 2 * short**3, 3)


def householder_flops(m: int, q: int, k: int) -> Fraction:
    """orgqr: Q (m × q) from k reflectors, 4mqk - 2(m+q)k² + 4k³/3 (LAWN 41)."""
    return Fraction(12 * m * q * k - 6 * (m + q) * k * k + 4 * k**3, 3)


def svd_flops(m: int, n: int, vectors: bool, full_matrices: bool) -> Fraction:
    m, n = max(m, n), min(m, n)
    if not vectors:
        return Fraction(12 * m * n * n - 4 * n**3, 3)
    if full_matrices:
        return Fraction(4 * m * m * n + 8 * m * n * n + 9 * n**3)
    return Fraction(14 * m * n * n + 8 * n**3)


def _matrix(op: Operation, routine: str) -> tuple[int, int, int]:
    """(batch, m, n) of the first input, checked square where the routine needs it."""
    a = op.inputs[0]
    if len(a) < 2:
        raise ShapeError(f"{where(op)}: {routine} needs a matrix (..., m, n); got {a}")
    m, n = a[-2:]
    if routine in _SQUARE and m != n:
        raise ShapeError(f"{where(op)}: {routine} needs square matrices; got {a}")
    return math.prod(a[:-2]), m, n


def _right_hand_sides(op: Operation, n: int, left: bool) -> int:
    """k, the columns (left) or rows (right) of B that multiply A's n."""
    b: Shape = op.inputs[1]
    if len(b) == 1 and left:  # a vector right-hand side
        width, size = 1, b[0]
    elif len(b) >= 2:
        size, width = (b[-2], b[-1]) if left else (b[-1], b[-2])
    else:
        raise ShapeError(f"{where(op)}: B {b} must be (..., n, k) (or (..., k, n) with attrs['left']=False)")
    if size != n:
        raise ShapeError(f"{where(op)}: B {b} does not fit A's size {n} (attrs['left']={left})")
    return width


@cost_rule(
    "decomposition",
    "dense linear algebra by attrs['routine'], LAPACK counts (LAWN 41; Golub & Van Loan) × batch: lu "
    "mn²-n³/3, cholesky n³/3, qr 2mn²-2n³/3 (+ forming Q with attrs['vectors']), svd 4mn²-4n³/3 values / "
    "14mn²+8n³ thin U,V / 4m²n+8mn²+9n³ full, eigh 4n³/3 / 9n³ with vectors, eig 10n³ / 25n³, "
    "triangular_solve n²k, lu_solve 2n²k, solve 2n³/3+2n²k, inverse 2n³, det LU+n-1, slogdet LU+2n-1",
)
def decomposition(
    op: Operation,
    *,
    routine: Routine,
    vectors: bool = False,
    full_matrices: bool = False,
    left: bool = True,
) -> OpCost:
    """Inputs: A (..., m, n), then B for the solves (the factored LU and its pivots for
    lu_solve: A is the LU matrix), the reflectors' scales τ (..., k) for householder_product.
    The results (factors, pivots, info, values, vectors) are the output and extra outputs,
    each written once. The conventions and their sources are in the module docstring."""
    high = 3 if routine == "lu_solve" else 2 if routine in _SOLVES or routine == "householder_product" else 1
    low = 2 if routine in _SOLVES or routine == "householder_product" else 1
    expect_inputs(op, low, high, "A[, B or τ]")
    batch, m, n = _matrix(op, routine)
    transcendentals = 0
    if routine == "lu":
        flops = lu_flops(m, n)
    elif routine == "cholesky":
        flops = Fraction(n**3, 3)
    elif routine == "qr":
        flops = qr_flops(m, n)
        if vectors:
            k = min(m, n)
            flops += householder_flops(m, m if full_matrices else k, k)
    elif routine == "householder_product":
        k = op.inputs[1][-1] if op.inputs[1] else 0
        if k > n or n > m:
            raise ShapeError(f"{where(op)}: householder_product needs m ≥ n ≥ k; A {op.inputs[0]}, τ {op.inputs[1]}")
        flops = householder_flops(m, n, k)
    elif routine == "svd":
        flops = svd_flops(m, n, vectors, full_matrices)
    elif routine == "eigh":
        flops = Fraction(9 * n**3) if vectors else Fraction(4 * n**3, 3)
    elif routine == "eig":
        flops = Fraction((25 if vectors else 10) * n**3)
    elif routine in _SOLVES:
        k = _right_hand_sides(op, n, left)
        per = {"triangular_solve": 1, "lu_solve": 2, "solve": 2}[routine]
        flops = per * Fraction(n * n * k) + (lu_flops(n, n) if routine == "solve" else 0)
    elif routine == "inverse":
        flops = Fraction(2 * n**3)
    else:  # det, slogdet: the LU, then the diagonal's product (or its logs' sum)
        flops = lu_flops(n, n) + max(n - 1, 0) + (n if routine == "slogdet" else 0)
        transcendentals = n if routine == "slogdet" else 0
    return default_cost(op, batch * _up(flops), batch * transcendentals)
