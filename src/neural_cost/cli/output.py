"""Writing result files atomically: a file is complete or absent, never half-written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..report.plot import file_mode


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, file_mode(target))  # the user's umask, as a plain open() would give, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """``write_json_atomic`` for the CLI: an unwritable path is a clear error, not a traceback."""
    from ..core.errors import NeuralCostError

    try:
        return write_json_atomic(path, data)
    except OSError as error:
        raise NeuralCostError(
            f"--json {path}: cannot write ({error.strerror or error}); pass a path to a file in a writable directory"
        ) from error
