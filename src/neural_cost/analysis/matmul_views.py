"""The view of a matrix product that picks its kernel class (``kernel_classes``): ``matmul``, or one of the
shapes a library runs at another rate than a curve over roofline time reads — ``wide_matmul`` (a vocabulary
projection) and PyTorch's ``thin_matmul`` (few rows). Neither is a member of ``matmul``: their points would bend
the curve every other product reads; without a curve of their own they read ``matmul``'s, noted
(``kernel_classes.FALLBACK_CLASSES``). A JAX dot with batch dimensions (attention's scores and their product by the
values) is ``batched_matmul`` (``batched``).
"""

from __future__ import annotations

import math

from ..core.estimate import OperationCost
from .utilization import is_backward

#: A matrix product of two matrices whose result is at least this wide (N, the result's last dim: a
#: language model's vocabulary projection) is ``wide_matmul``. On this project's AMD VM PyTorch's
#: (MKL's) sgemm ran 480 rows × 240 deep at 1.04× the matmul curve for N = 1024, 1.08× for 2048, 1.19×
#: for 4096, 1.24× for 8192 and 1.22× for 16384 (much the same at depths 128–1024 and 64–1920 rows),
#: where XLA's dots ran every N at 360–390 GFLOP/s: GPT-2's 240→8192 head, half its time, was read
#: 15–43% fast. Not a member of ``matmul`` (its points would bend the curve every other matmul reads):
#: without a curve of its own (JAX's and TensorFlow's grids have none) it reads ``matmul``'s, noted
#: (``kernel_classes.FALLBACK_CLASSES``). A batched product (attention scores), a matrix-vector one, or an XLA dot
#: whose result does not end in the right operand's free dimension is ``matmul``.
WIDE_MATMUL = 4096
#: A PyTorch product of two matrices with fewer rows than this (M, the result's first dim; a mixture of experts'
#: grouped product of M tokens through G experts: M ÷ G, as ATen's CPU kernel runs one product a group) is
#: ``thin_matmul``.
#: MKL's sgemm ran such products far below the rate it reached with more rows, at every weight shape the grid
#: has (32 → 64 to 512 → 8192, wide results among them): at 1.6× their compute bound with 1,024–4,096 rows,
#: 1.6–1.8× at 512, 1.7–2.1× at 200 (the 4096- and 8192-wide ones 2.0–2.1×), 2.0–2.9× at 64 (on this project's AMD
#: VM; launch-bound shapes aside). One curve over roofline time mixed them — 64 rows × 768 → 3072 (0.88 ms of
#: roofline, run at 2.5×) beside 512 rows × 256 → 1024 (0.78 ms, 1.75×) —, and a CLIP or wav2vec2 encoder at
#: batch 2 (about 100 rows) ran its linears at 1.38× their expectation. Those are forward products: a training
#: step's backward ones (a weight's gradient has the layer's output width for rows) and a product in a loop (a
#: kernel run several times a run, which reads the loop's curves, ``loop_dots``) were not measured so and stay
#: ``matmul``. XLA's dots lose less with few rows (JAX's grid: 0.82× the bound at 64 rows × 768 → 3072,
#: 0.69–0.73× at 256 rows and more), so JAX's and TensorFlow's products stay ``matmul`` too.
THIN_MATMUL = 256
#: Of those, a product of fewer rows than this is ``thin_matmul:few`` (a way to run, ``kernel_model.WAYS``: without a
#: curve of its own it reads ``thin_matmul``'s). MKL ran 1-, 4- and 16-row products at 2–12× their compute bound (a
#: matrix-vector product or a packed weight read for a handful of rows) where 64- and 200-row ones of the same
#: roofline time ran at 1.0–2.0× (this project's AMD VM, PyTorch's 45.2 grid): on one curve the few-row points set the
#: 120-row linears of a BERT-style encoder at batch 1 (a program's framework floor is its batch-1 run less its
#: kernels) to 1.6× their time alone — 855 µs for 120 rows × 240 → 960, measured 541 — and the curve's cross-validated
#: median error was 37%; split, 19% (64 and 200 rows) and 27% (1–16 rows), that linear read 456 µs.
FEW_ROWS = 32
#: A JAX ``dot_general`` with batch dimensions (their product above 1: attention's scores and its product by the values,
#: one small product a head) run once a run is ``batched_matmul``. XLA:CPU 0.10.2 ran such dots at 1.1–6.2× their
#: compute bound where its plain dots of the same roofline time ran at 1.0–1.4× (JAX's grid on an Intel VM: the
#: attention programs' dots 8 × 8 heads × 256² × 64 at 3.9–6.2× and 4096 × 256 → 256 at 1.01×, both 1.70 ms of roofline;
#: its batched dots of 16 × 128² × 64 and 32 × 256² × 64 at 2.1×, 8 × 512³ at 1.08×). On one curve the batched points
#: set its knot at 1.7 ms to 4.2×: a mixture of experts' two 2.1 GFLOP dense dots were expected at 7.2 ms and ran in
#: about 4, and a Flax encoder's batched attention dots at 2–4× their expectation. PyTorch's ``bmm`` ran at its linears'
#: rate (1.02–1.12×) and TensorFlow's ``BatchMatMulV2`` near its ``MatMul``'s, so their products stay ``matmul``; so
#: does a dot in a loop (``loop_dots``).
BATCHED_MATMUL = "batched_matmul"


def matmul_class(cost: OperationCost, framework: str | None = None, executions: int = 1) -> str:
    """For a JAX dot with batch dimensions run once a run, ``batched_matmul`` (``batched``). For a 2-D matmul
    record (both operands and the result matrices): ``thin_matmul`` for a PyTorch forward one
    with fewer than ``THIN_MATMUL`` rows run once a run (``executions``; ``thin_matmul:few`` under ``FEW_ROWS``), else
    ``wide_matmul`` for one whose result is at least ``WIDE_MATMUL`` wide; ``matmul`` for any other."""
    op = cost.operation
    if framework == "jax" and executions <= 1 and cost.kind == "matmul" and batched(cost):
        return BATCHED_MATMUL
    two_d = len(op.output) == 2 and len(op.inputs) >= 2 and all(len(shape) == 2 for shape in op.inputs[:2])
    rows = op.output[0] if two_d else 0
    if cost.kind == "grouped_matmul" and framework == "torch" and _tokens_by_expert(cost):
        rows = op.output[0] // op.inputs[1][0]  # ATen's CPU kernel: one product a group, its rows
    elif cost.kind not in ("matmul", "linear") or not two_d:
        return "matmul"
    if framework == "torch" and executions <= 1 and not is_backward(op, framework) and rows < THIN_MATMUL:
        return "thin_matmul:few" if rows < FEW_ROWS else "thin_matmul"
    return "wide_matmul" if op.output[-1] >= WIDE_MATMUL else "matmul"


def _tokens_by_expert(cost: OperationCost) -> bool:
    """Whether a ``grouped_matmul`` record is a mixture of experts' forward product, (M, K) tokens through
    (G, K, N) weights: its rows per group, M ÷ G on average (the routing is data), pick its view."""
    op = cost.operation
    shapes = [len(shape) for shape in op.inputs[:2]]
    return shapes == [2, 3] and op.attrs.get("group_dims", ((), (0,))) == ((), (0,)) and op.inputs[1][0] > 0


def batched(cost: OperationCost) -> bool:
    """Whether a record is a ``dot_general`` with batch dimensions whose product is above 1 (its attrs'
    ``dimension_numbers``): many small products, one a batch entry."""
    numbers = cost.operation.attrs.get("dimension_numbers")
    if not numbers:
        return False
    batch = numbers[1][0]
    lhs = cost.operation.inputs[0] if cost.operation.inputs else ()
    sizes = [lhs[d] for d in batch if 0 <= d < len(lhs)]
    return bool(sizes) and len(sizes) == len(batch) and math.prod(sizes) > 1
