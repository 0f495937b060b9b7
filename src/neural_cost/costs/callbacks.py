"""Host callbacks: Python code a program calls back into (JAX ``pure_callback``/``io_callback``,
TensorFlow ``PyFunc``/``EagerPyFunc``).

A trace cannot see inside the callback, so its FLOPs are unknown. The record counts what is
known — its operands read and its results written, the bytes that cross to the host and
back — and 0 FLOPs, with a note on the estimate saying the FLOPs are unknown. It is modeled
(not unmodeled) because its traffic is counted; its work is not, and the note says so.
"""

from __future__ import annotations

from ..core.kinds import OpCost
from ..core.records import Operation
from .registry import cost_rule, read_inputs


@cost_rule(
    "callback",
    "a host callback: its operands read and results written (bytes), FLOPs unknown: counted as 0 with a note "
    "naming attrs['target'] (the Python function, when known); attrs['results_known']=False when the results' "
    "shapes are not static (their bytes are then not counted, and the note says so)",
)
def callback(op: Operation, *, target: str | None = None, results_known: bool = True) -> OpCost:
    """The output and extra outputs are the results; a callback whose results have no static
    shape (TensorFlow's ``py_function``) records an empty output and ``results_known=False``."""
    named = f" {target}" if target else ""
    notes = [
        f"FLOPs unknown: host callback{named} runs Python the trace cannot see; only the bytes of its operands "
        f"and results are counted"
    ]
    if not results_known:
        notes.append(f"host callback{named}: its results have no static shape; their bytes are not counted")
    return OpCost({}, read_inputs(op), op.output_bytes if results_known else 0, notes=tuple(notes))
