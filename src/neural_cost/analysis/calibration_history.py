"""Kernel calibrations merged over time: a shared machine's speed moves between calibrations.

One calibration measures every point within a minute or two, and keeps the smallest of its
passes' medians (``calibrate_kernels``): that escapes a stall, not a spell. On this project's
2-core VM, five PyTorch calibrations made within an hour read GPT-2 (batch 16) at 85.7, 94.9,
87.9, 91.5 and 94.0 ms; the 82 matmul points of the first ran a median 9.8% faster than the
second's, its compute-bound 50–90 ms points as well — the whole machine, not one point's noise,
and a benchmark scored against the first read every eager transformer 13–20% too fast.

So ``kernel_calibration`` keeps the raw times of the last ``HISTORY`` calibrations made on this
machine with the same framework and kernel-model versions, in a file beside the calibration
(``history_path``), and fits each point's **median** over them (the drift probes' and the
first-touch cost's too). The calibration's notes say how many were merged and how fast each ran
against the median: that spread is how far this machine's speed moves between calibrations, an
error no single calibration can show. ``neural-cost calibrate --kernels --fresh`` starts over.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..hardware.kernel_model import KernelCalibration, Point, fit_calibration

#: Calibrations whose points are merged: this one and up to two before it.
HISTORY = 3
SCHEMA = 1
#: Every merged calibration's note starts so (``report.expected_text.calibration_lines`` prints it).
NOTE_PREFIX = "points: the median of"


@dataclass(frozen=True, slots=True)
class Entry:
    """One calibration's raw measurements, as the history file keeps them."""

    when: str  # ISO date and minute
    versions: dict[str, str]
    machine: dict[str, Any]
    seconds: dict[str, float]  # point key (``point_keys``) → measured seconds
    probes: dict[str, float]  # drift probe → seconds
    first_touch: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "when": self.when,
            "versions": self.versions,
            "machine": self.machine,
            "seconds": self.seconds,
            "probes": self.probes,
            "first_touch_seconds_per_byte": self.first_touch,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Entry:
        touch = data.get("first_touch_seconds_per_byte")
        return cls(
            when=str(data["when"]),
            versions={str(k): str(v) for k, v in data["versions"].items()},
            machine=dict(data["machine"]),
            seconds={str(k): float(v) for k, v in data["seconds"].items()},
            probes={str(k): float(v) for k, v in data["probes"].items()},
            first_touch=None if touch is None else float(touch),
        )


def point_keys(points: Sequence[Point]) -> list[str]:
    """A key per point that names the same point in another calibration of the same grid: its
    program, its class and its rank among that program's points of that class (a JAX layer norm
    runs two elementwise kernels)."""
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for point in points:
        pair = (point.name, point.kernel_class)
        seen[pair] = seen.get(pair, 0) + 1
        keys.append(f"{point.name} | {point.kernel_class} | {seen[pair]}")
    return keys


def _plain(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), so that entries compare."""
    return json.loads(json.dumps(value, sort_keys=True))


def entry_of(calibration: KernelCalibration, when: str | None = None) -> Entry:
    return Entry(
        when=when or datetime.datetime.now().isoformat(timespec="minutes"),
        versions=dict(calibration.versions),
        machine=_plain(dict(calibration.machine)),
        seconds=dict(
            zip(point_keys(calibration.points), (p.measured_seconds for p in calibration.points), strict=True)
        ),
        probes={name: seconds for name, (_, seconds) in calibration.probes.items()},
        first_touch=calibration.first_touch_seconds_per_byte,
    )


def history_path(calibration_file: Path) -> Path:
    """The history file beside a cached calibration (``kernels-torch-….json`` → ``….history.json``)."""
    return calibration_file.with_name(calibration_file.stem + ".history.json")


def load_history(path: Path) -> list[Entry]:
    """The entries saved at ``path``, oldest first; none when there is no file or it cannot be
    read (the history only steadies a calibration: losing it loses nothing measured now)."""
    try:
        data = json.loads(path.read_text())
        if data.get("schema") != SCHEMA:
            return []
        return [Entry.from_dict(item) for item in data["entries"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def save_history(entries: Sequence[Entry], path: Path) -> Path:
    """Write atomically, as ``save_calibration`` does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump({"schema": SCHEMA, "entries": [e.to_dict() for e in entries]}, stream, indent=1, sort_keys=True)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def merged(
    calibration: KernelCalibration, earlier: Sequence[Entry], when: str | None = None
) -> tuple[KernelCalibration, list[Entry]]:
    """``calibration`` fitted again on each point's median over it and the last ``HISTORY − 1``
    of ``earlier`` made on the same machine with the same versions, and the entries to keep (the
    merged ones, oldest first). Alone (no such entry), it is returned as it is."""
    new = entry_of(calibration, when)
    same = [e for e in earlier if e.versions == new.versions and e.machine == new.machine]
    entries = [*same[-(HISTORY - 1) :], new] if HISTORY > 1 else [new]
    if len(entries) == 1:
        return calibration, entries
    keys = point_keys(calibration.points)
    times = [[e.seconds[key] for e in entries if key in e.seconds] for key in keys]
    medians = [_median(found) for found in times]
    points = [
        replace(point, measured_seconds=seconds) for point, seconds in zip(calibration.points, medians, strict=True)
    ]
    by_key = dict(zip(keys, medians, strict=True))
    speeds = [_median([seconds / by_key[key] for key, seconds in e.seconds.items() if by_key.get(key)] or [1.0])
              for e in entries]  # fmt: skip
    apart = [max(found) / min(found) - 1 for found in times if len(found) > 1 and min(found) > 0]
    touches = [e.first_touch for e in entries if e.first_touch is not None]
    note = (
        f"{NOTE_PREFIX} its times in the {len(entries)} calibrations made on this machine with these versions "
        f"({', '.join(e.when.replace('T', ' ') for e in entries)}); against those medians each calibration's "
        f"points ran at {', '.join(f'{s:.2f}×' for s in speeds)} (median), and a point's times read a median "
        f"{_median(apart or [0.0]):.0%} apart (slowest ÷ fastest − 1): how far this machine's speed moves between "
        f"calibrations. `neural-cost calibrate --kernels --fresh` starts over"
    )
    fitted = fit_calibration(
        calibration.framework,
        calibration.hardware,
        points,
        machine=calibration.machine,
        versions=calibration.versions,
        date=calibration.date,
        method=calibration.method,
        notes=(*calibration.notes, note),
        first_touch_seconds_per_byte=_median(touches) if touches else None,
        fresh_results=calibration.fresh_results,
    )
    probes = {
        name: (kind, _median([e.probes[name] for e in entries if name in e.probes]))
        for name, (kind, _) in calibration.probes.items()
    }
    return replace(fitted, probes=probes), entries
