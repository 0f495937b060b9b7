"""PyTorch's few-row products by their rows: a fixed cost per weight element and one per row and weight element.

A curve over roofline time cannot tell a product's rows from its weights. At one weight shape MKL's sgemm takes
about a fixed time per weight element (its packing, more for weights of half the largest cache or more) plus a time per
row and weight element (its multiply-adds): on this project's AMD VM 768 → 3072 took 1,097 µs at 16 rows, 3,597 at
64 and 8,109 at 200 — 487 µs and 38.1 µs a row. Read over roofline time, a 100-row product met 64-row points of
larger weights (1.7–2.1× their bound) where its own rows ran at about 1.4×. So the linears of the PyTorch grid
(``linear MxKxN``, ``LINEAR``) of at least ``MIN_ROWS`` rows fit

    seconds = overhead + per_weight · K·N (per_weight_past for weights of ``past_bytes`` or more)
                       + per_row · M·K·N (per_row_wide for results ``WIDE`` wide or more)

by least squares in relative error, each coefficient at least 0 (a negative one is left out and the rest fitted
again; the past and wide rates at least the plain ones), five-fold cross-validated. Monotone: more rows, a deeper
or wider weight never predict less time. A
``thin_matmul`` or ``thin_matmul:few`` kernel of one 2-D product is read off it where the calibration's linears
fit one (``analysis/linear_rows.py``); one-row products (a matrix-vector kernel of its own) and the other classes
keep their curves.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ._isotonic import median as _median
from ._isotonic import percentile as _percentile
from .kernel_model import FOLDS, Point

#: A PyTorch grid program that is one ``nn.functional.linear`` of M rows, K → N (``adapters/_torch/microbench``).
LINEAR = re.compile(r"^linear (\d+)x(\d+)x(\d+)$")
#: Fewer rows than this run as a matrix-vector product (1 row) or barely past it: out of the fit.
MIN_ROWS = 4
#: A result this wide or more (a vocabulary projection) costs ``per_row_wide`` a row and weight element: MKL ran
#: them 1.2–1.4× slower than narrower ones (``analysis/matmul_views.WIDE_MATMUL``, the same width).
WIDE = 4096
#: The dtype of the grid's linears (``torch.randn``'s default): a product of another runs another MKL kernel at
#: other rates (float64's dgemm, bf16's), so it keeps its class's curve, which reads its dtype's peak.
DTYPE = "float32"
#: Points at least, and the classes whose linears are fitted.
MIN_POINTS = 12
CLASSES = frozenset({"matmul", "wide_matmul", "thin_matmul", "thin_matmul:few"})


@dataclass(frozen=True, slots=True)
class RowsModel:
    """The fitted times (seconds) and how well they predicted held-out linears."""

    overhead: float
    per_weight: float
    per_weight_past: float
    per_row: float
    per_row_wide: float
    #: Weights of this many bytes or more cost ``per_weight_past`` an element (half the largest cache).
    past_bytes: int
    points: int
    median_error: float | None = None
    p90_error: float | None = None

    def seconds(self, rows: int, depth: int, width: int, itemsize: int = 4) -> float:
        """Expected seconds of one product of ``rows`` × ``depth`` by ``depth`` × ``width``."""
        weights = depth * width
        per = self.per_weight_past if weights * itemsize >= self.past_bytes else self.per_weight
        return self.overhead + per * weights + (self.per_row_wide if width >= WIDE else self.per_row) * rows * weights

    def describe(self) -> str:
        error = "" if self.median_error is None else f"; ±{self.median_error:.0%} on held-out linears"
        return (
            f"{format(self.overhead * 1e6, '.1f')} µs + {self.per_weight * 1e12:.0f} ps a weight element "
            f"({self.per_weight_past * 1e12:.0f} past {self.past_bytes / 2**20:.0f} MiB) + "
            f"{self.per_row * 1e12:.1f} ps a row and weight element ({self.per_row_wide * 1e12:.1f} for results {WIDE} "
            f"wide or more), over {self.points} linears{error}"
        )


def linear_points(points: Sequence[Point]) -> list[tuple[int, int, int, float]]:
    """The grid's linears of ``CLASSES`` with ``MIN_ROWS`` rows or more: ``(M, K, N, measured seconds)``."""
    found = []
    for point in points:
        shape = LINEAR.match(point.name)
        if shape is None or point.kernel_class not in CLASSES or not point.measured_seconds > 0:
            continue
        rows, depth, width = (int(v) for v in shape.groups())
        if rows >= MIN_ROWS:
            found.append((rows, depth, width, point.measured_seconds))
    return found


def fit_rows_model(points: Sequence[Point], past_bytes: int) -> RowsModel | None:
    """The model over ``points``' linears (the module docstring), or None with fewer than ``MIN_POINTS``."""
    data = linear_points(points)
    if len(data) < MIN_POINTS:
        return None
    model = _fit(data, past_bytes)
    errors = []
    for fold in range(FOLDS):
        held = data[fold::FOLDS]
        kept = [item for i, item in enumerate(data) if i % FOLDS != fold]
        fitted = _fit(kept, past_bytes)
        errors += [abs(fitted.seconds(m, k, n) - t) / t for m, k, n, t in held]
    return RowsModel(*_coefficients(model), past_bytes, len(data), _median(errors), _percentile(errors, 0.9))


def _coefficients(model: RowsModel) -> tuple[float, float, float, float, float]:
    return model.overhead, model.per_weight, model.per_weight_past, model.per_row, model.per_row_wide


def _fit(data: Sequence[tuple[int, int, int, float]], past_bytes: int) -> RowsModel:
    """Least squares of (prediction − measured) ÷ measured, coefficients kept at 0 or above (active set)."""
    rows = [
        (1.0, k * n * (4 * k * n < past_bytes), k * n * (4 * k * n >= past_bytes), m * k * n * (n < WIDE),
         m * k * n * (n >= WIDE), t)
        for m, k, n, t in data
    ]  # fmt: skip
    active = [i for i in range(5) if any(row[i] for row in rows)]
    while True:
        solved = _solve([[row[i] / row[5] for i in active] for row in rows])
        if solved is None or all(v >= 0 for v in solved):
            break
        active = [i for i, v in zip(active, solved, strict=True) if v > 0]  # drop the negative ones, fit again
    values = [0.0] * 5
    for i, v in zip(active, solved or [], strict=False):
        values[i] = max(v, 0.0)
    overhead, per_weight, per_weight_past, per_row, per_row_wide = values
    # a larger weight or a wider result never cheaper an element: no step down at ``past_bytes`` or ``WIDE``
    past, wide = max(per_weight_past, per_weight), max(per_row_wide, per_row)
    return RowsModel(overhead, per_weight, past, per_row, wide, past_bytes, len(data))


def _solve(matrix: Sequence[Sequence[float]]) -> list[float] | None:
    """Least squares of ``matrix · x = 1`` by its normal equations (Gaussian elimination); None if singular."""
    size = len(matrix[0]) if matrix else 0
    if not size:
        return []
    scale = [max(abs(row[j]) for row in matrix) or 1.0 for j in range(size)]  # columns of unlike magnitudes
    scaled = [[row[j] / scale[j] for j in range(size)] for row in matrix]
    a = [[sum(r[i] * r[j] for r in scaled) for j in range(size)] + [sum(r[i] for r in scaled)] for i in range(size)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-12 * max(1.0, max(abs(v) for v in a[pivot])):
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(size):
            if r != col:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
    solved = [a[i][size] / a[i][i] / scale[i] for i in range(size)]
    return solved if all(math.isfinite(v) for v in solved) else None
