"""One helper the backward and loss rules share: a string attribute drawn from a fixed set.

(It belongs beside ``int_attr``/``bool_attr`` in ``registry.py``; kept here until the
typed-attribute registration lands there.)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import RecordError
from ..core.records import Operation
from .registry import where


def choice_attr(op: Operation, name: str, choices: Sequence[str], default: str) -> str:
    """``op.attrs[name]`` (default ``default``), which must be one of ``choices``."""
    value = op.attrs.get(name, default)
    if not isinstance(value, str) or value not in choices:
        raise RecordError(f"{where(op)} attrs[{name!r}]={value!r}; use one of {', '.join(map(repr, choices))}")
    return value
