"""Writing result files atomically: a file is complete or absent, never half-written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..report.figure import write_atomically


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    return write_atomically(path, lambda handle: handle.write(text), binary=False)


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """``write_json_atomic`` for the CLI: an unwritable path is a clear error, not a traceback."""
    from ..core.errors import NeuralCostError

    try:
        return write_json_atomic(path, data)
    except OSError as error:
        raise NeuralCostError(
            f"--json {path}: cannot write ({error.strerror or error}); pass a path to a file in a writable directory"
        ) from error
