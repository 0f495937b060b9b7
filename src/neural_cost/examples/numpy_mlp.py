"""A two-layer MLP forward pass in numpy, with its operations written out by hand.

This is the bundled example until a framework adapter traces real models: the operation
list mirrors exactly what the numpy code executes (each numpy call reads its operands and
writes a new array), so the roofline describes the computation that is timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..core.records import Operation, TensorSpec


def build(
    batch: int = 256, d_in: int = 1024, hidden: int = 4096, d_out: int = 1024, seed: int = 0
) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    """``(forward, (x, w1, b1, w2, b2))`` with random float32 data (never constants)."""
    rng = np.random.default_rng(seed)

    def array(*shape: int) -> np.ndarray:
        return cast(np.ndarray, rng.standard_normal(shape, dtype=np.float32))

    args = (array(batch, d_in), array(d_in, hidden) * 0.03, array(hidden), array(hidden, d_out) * 0.02, array(d_out))
    return forward, args


def forward(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> np.ndarray:
    h = x @ w1
    h = h + b1
    h = np.maximum(h, 0.0)
    y = h @ w2
    out: np.ndarray = y + b2
    return out


def operations(batch: int = 256, d_in: int = 1024, hidden: int = 4096, d_out: int = 1024) -> list[Operation]:
    """One record per numpy call in ``forward``, in order."""
    return [
        Operation("fc1", "linear", ((batch, d_in), (d_in, hidden)), (batch, hidden), "float32", scope="layer1"),
        Operation(
            "bias1",
            "elementwise",
            ((batch, hidden), (hidden,)),
            (batch, hidden),
            "float32",
            scope="layer1",
            attrs={"op": "add"},
        ),
        Operation(
            "relu",
            "elementwise",
            ((batch, hidden),),
            (batch, hidden),
            "float32",
            scope="layer1",
            attrs={"op": "maximum"},
        ),
        Operation("fc2", "linear", ((batch, hidden), (hidden, d_out)), (batch, d_out), "float32", scope="layer2"),
        Operation(
            "bias2",
            "elementwise",
            ((batch, d_out), (d_out,)),
            (batch, d_out),
            "float32",
            scope="layer2",
            attrs={"op": "add"},
        ),
    ]


def boundary(batch: int = 256, d_in: int = 1024, hidden: int = 4096, d_out: int = 1024) -> list[TensorSpec]:
    """The program's inputs, parameters and output: what must move at least once."""
    return [
        TensorSpec("x", (batch, d_in), "float32", "input"),
        TensorSpec("w1", (d_in, hidden), "float32", "parameter"),
        TensorSpec("b1", (hidden,), "float32", "parameter"),
        TensorSpec("w2", (hidden, d_out), "float32", "parameter"),
        TensorSpec("b2", (d_out,), "float32", "parameter"),
        TensorSpec("y", (batch, d_out), "float32", "output"),
    ]
