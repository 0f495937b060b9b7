"""Kernel calibrations merged over time: a shared machine's speed moves between calibrations.

One calibration measures every point within a minute or two, and keeps the smallest of its
passes' medians (``calibrate_kernels``): that escapes a stall, not a spell. On this project's
2-core VM, five PyTorch calibrations made within an hour read GPT-2 (batch 16) at 85.7, 94.9,
87.9, 91.5 and 94.0 ms; the 82 matmul points of the first ran a median 9.8% faster than the
second's, its compute-bound 50–90 ms points as well — the whole machine, not one point's noise,
and a benchmark scored against the first read every eager transformer 13–20% too fast.

So ``kernel_calibration`` keeps the raw times of the last ``HISTORY`` calibrations made on this
machine with the same framework and kernel-model versions, in a file beside the calibration
(``history_path``), and fits each point's **median** over them (a drift probe's over the
calibrations that probed the same program's kernel of the same class, and the first-touch cost's).
A loop's kernel (``is_loop``) keeps its **smallest** time instead where the merged calibrations' fastest
loop passes ran in two host states (``fastest_in_two_states``: their cross-core wake-ups before those passes
at least ``WAKES_APART`` apart): on that VM small kernels in a loop
ran in two states 1.5–2.3× apart for 10–40 s at a time while the rest held, so the median of three
calibrations is whichever state two of them caught (a scanned cell's dots of 1.1–2 MiB of weights
read 0.76–1.08× their roofline in one calibration, 0.95–1.80× as the median of three); the smallest is
the loops as the machine runs them when the host leaves it both cores, what the loop drift probe
then measures against. Where those passes ran in one state (or no wake-up was measured) it takes the
median, as every other point (the fastest times are then one state's samples): on an Intel VM whose
wake-ups all read 70–75 µs, a 512-wide scanned dot read 12.4 µs in one calibration, 31.4 and 25.2 µs in
the next two and 33–36 µs for the hour after; a fast spell no wake-up names is not a state to expect
(the held-out scan at batch 4 had been expected 61% fast).
A loop kernel's usual time (``Point.usual_seconds``: the median of its program's
passes) is merged by its median over the calibrations that kept one (of two, the higher: a state that
ran), never below its merged time. The host states of those times (``KernelCalibration.loop_wakes``)
merge so: the smallest wake-up before a fastest pass (whichever way the times merged), the median (higher)
of those before the usual ones.
Where the merged calibrations saw the host in two states (their usual wake-ups reach ``WAKES_APART`` × the
smallest fastest one), the usual times and wake-up come from those in the slower state only (a usual wake-up
past the two's geometric mean, as ``usual_loops`` splits them), and a calibration made in the slower state
is kept past the last three while none of them saw it, for a day at most (``carried``, ``CARRIED_FOR``): on
that VM one quiet JAX calibration pushed the only busy one out of the history, and a scan run with the host
busy then had no expectation in its state.
The calibration's notes say how many were merged and each one's times against the medians (1.20×:
20% slower): that spread is how far this machine's speed moves between calibrations, an error no
single calibration can show. ``neural-cost calibrate --kernels --fresh`` starts over.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from statistics import median_high
from typing import Any

from ..hardware._isotonic import median as _median
from ..hardware.host_cache import write_json
from ..hardware.kernel_model import KernelCalibration, Point, fit_calibration
from .kernel_classes import LOOP


def is_loop(kind: str) -> bool:
    """A class of a loop's kernels (``matmul@loop``, a recurrent layer's ``rnn:kept``): a step is short, its
    program long; one such probe beside the families' says how fast small kernels in a loop run now
    (on a 2-core VM they moved 1.4–2.7× for tens of seconds at a time while the other probes held)."""
    return kind.endswith(LOOP) or kind.split(":", 1)[0] == "rnn"


#: Calibrations whose points are merged: this one and up to two before it.
HISTORY = 3
#: A calibration whose usual passes' wake-up was under this multiple of its fastest passes' saw a single
#: host state: it cannot say how its loop kernels move with the wake-up (no expectation now); merged
#: calibrations are split into two states (``_split``) and one kept from before them (``carried``) so too.
#: On an AMD VM the two states read 7–10 and 17–20 µs (1.7× apart at the least); on an Intel VM one state's
#: readings spanned 50–90 µs and its calibrations' medians 57–74 µs, and at 1.2 those 1.3× took one
#: calibration's fast spell for the quiet state (a scan expected at 1.19 ms ran 2.88 ms, run DW).
WAKES_APART = 1.5
#: A calibration made in a host state the merged ones did not see is kept for at most this long after it.
CARRIED_FOR = timedelta(days=1)
SCHEMA = 2
#: Every merged calibration's note starts so (``report.expected_text.calibration_lines`` prints it).
NOTE_PREFIX = "points: the median of"
LOOPS_SMALLEST = "a loop's kernel: the smallest, its fastest passes run in two host states"
LOOPS_MEDIAN = "a loop's kernel's too: its fastest passes run in one host state"


def apart(low: float, high: float) -> bool:
    """Whether two cross-core wake-ups are two host states: ``high`` at least ``WAKES_APART`` × a positive ``low``."""
    return low > 0 and high >= WAKES_APART * low


def dividing_line(fast: float, usual: float) -> float:
    """The wake-up between two host states: the geometric mean of the fast and the usual one (at or under it,
    the fast state)."""
    return math.sqrt(fast * usual)


@dataclass(frozen=True, slots=True)
class Entry:
    """One calibration's raw measurements, as the history file keeps them."""

    when: str  # ISO date and minute
    versions: dict[str, str]
    machine: dict[str, Any]
    seconds: dict[str, float]  # point key (``point_keys``) → measured seconds
    probes: dict[str, tuple[str, float]]  # drift probe → (its kernel's class, seconds)
    first_touch: float | None
    usual: dict[str, float] = field(default_factory=dict)  # point key → a loop kernel's usual seconds
    wakes: tuple[float, float] | None = None  # ``KernelCalibration.loop_wakes``
    evicted: float | None = None  # ``KernelCalibration.evicted_seconds_per_byte``

    def to_dict(self) -> dict[str, Any]:
        return {
            "when": self.when,
            "versions": self.versions,
            "machine": self.machine,
            "seconds": self.seconds,
            "probes": {name: list(probe) for name, probe in self.probes.items()},
            "first_touch_seconds_per_byte": self.first_touch,
            "usual_seconds": self.usual,
            "loop_wakes": None if self.wakes is None else list(self.wakes),
            "evicted_seconds_per_byte": self.evicted,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Entry:
        """An entry as saved; a ``ValueError`` (or ``KeyError``, ``TypeError``) for one that is not."""
        touch = data.get("first_touch_seconds_per_byte")
        return cls(
            when=str(data["when"]),
            versions={str(k): str(v) for k, v in data["versions"].items()},
            machine=dict(data["machine"]),
            seconds={str(k): _seconds(v) for k, v in data["seconds"].items()},
            probes={str(k): (str(kind), _seconds(v)) for k, (kind, v) in data["probes"].items()},
            first_touch=None if touch is None else _seconds(touch),
            usual={str(k): _seconds(v) for k, v in (data.get("usual_seconds") or {}).items()},
            wakes=None if data.get("loop_wakes") is None else _pair(data["loop_wakes"]),
            evicted=None if (cost := data.get("evicted_seconds_per_byte")) is None else _seconds(cost),
        )


def _pair(value: Any) -> tuple[float, float]:
    """``loop_wakes`` as saved: two finite positive times."""
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"{value!r} is not a pair of wake-up times")
    return _seconds(value[0]), _seconds(value[1])


def _seconds(value: Any) -> float:
    """A measured time as saved: a finite positive number (not a bool, a string, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{value!r} is not a finite positive time")
    return float(value)


def point_keys(points: Sequence[Point]) -> list[str]:
    """A key per point that names the same point in another calibration of the same grid: its
    program, its class, its roofline times (4 digits: the same kernel scored on the same spec) and
    its rank among that program's points alike (a JAX layer norm runs two elementwise kernels). A
    kernel that drops out of one calibration shifts no other's key; on another spec none match."""
    seen: dict[str, int] = {}
    keys = []
    for point in points:
        key = f"{point.name} | {point.kernel_class} | {point.compute_seconds:.4g} | {point.memory_seconds:.4g}"
        seen[key] = seen.get(key, 0) + 1
        keys.append(f"{key} | {seen[key]}")
    return keys


def _plain(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), so that entries compare."""
    return json.loads(json.dumps(value, sort_keys=True))


def entry_of(calibration: KernelCalibration, when: str | None = None) -> Entry:
    keys = point_keys(calibration.points)
    return Entry(
        when=when or datetime.now().isoformat(timespec="minutes"),
        versions=dict(calibration.versions),
        machine=_plain(dict(calibration.machine)),
        seconds=dict(zip(keys, (p.measured_seconds for p in calibration.points), strict=True)),
        probes=dict(calibration.probes),
        first_touch=calibration.first_touch_seconds_per_byte,
        usual={key: p.usual_seconds for key, p in zip(keys, calibration.points, strict=True) if p.usual_seconds},
        wakes=calibration.loop_wakes,
        evicted=calibration.evicted_seconds_per_byte,
    )


def history_path(calibration_file: Path) -> Path:
    """The history file beside a cached calibration (``kernels-torch-….json`` → ``….history.json``)."""
    return calibration_file.with_name(calibration_file.stem + ".history.json")


def load_history(path: Path) -> list[Entry]:
    """The entries saved at ``path``, oldest first, less any that cannot be read; none when there
    is no file, or it is of another schema or cannot be read (the history only steadies a
    calibration: losing it loses nothing measured now)."""
    try:
        data = json.loads(path.read_text())
        items = data["entries"] if data.get("schema") == SCHEMA else []
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    entries = []
    for item in items if isinstance(items, list) else ():
        try:
            entries.append(Entry.from_dict(item))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return entries


def save_history(entries: Sequence[Entry], path: Path) -> Path:
    """Write atomically, as ``save_calibration`` does."""
    return write_json(path, {"schema": SCHEMA, "entries": [e.to_dict() for e in entries]})


def probes_before(earlier: Sequence[Entry], versions: dict[str, str], machine: dict[str, Any]) -> tuple[str, ...]:
    """The drift probes' programs of the newest of ``earlier`` made on ``machine`` with ``versions`` (none without
    one): a calibration to be merged with it measures them again rather than the whole quick grid to choose its
    own (``calibrate_kernels.probe_times``), so that each probe's median is over the same program's times."""
    same = [e for e in earlier if e.versions == versions and e.machine == _plain(machine)]
    return tuple(same[-1].probes) if same else ()


def merged(
    calibration: KernelCalibration, earlier: Sequence[Entry], when: str | None = None
) -> tuple[KernelCalibration, list[Entry]]:
    """``calibration`` fitted again on each point's median over it and the last ``HISTORY − 1``
    of ``earlier`` made on the same machine with the same versions, and the entries to keep (the
    merged ones, oldest first). Alone (no such entry), it is returned as it is."""
    new = entry_of(calibration, when)
    same = [e for e in earlier if e.versions == new.versions and e.machine == new.machine]
    entries = [*same[-(HISTORY - 1) :], new] if HISTORY > 1 else [new]
    kept = carried(same[: len(same) - len(entries) + 1], entries)
    if len(entries) == 1 and not kept:
        return calibration, entries
    keys = point_keys(calibration.points)
    times = [[e.seconds[key] for e in entries if key in e.seconds] for key in keys]
    slower, wake_note = _slower_state(entries, kept)
    states = fastest_in_two_states(entries)  # a loop's kernel: its smallest only then (the module docstring)
    medians = [
        (min if states and is_loop(point.kernel_class) else _median)(found)
        for point, found in zip(calibration.points, times, strict=True)
    ]
    usual = [[e.usual[key] for e in slower or entries if key in e.usual] for key in keys]  # loops': median_high
    points = [
        replace(point, measured_seconds=seconds, usual_seconds=max(seconds, median_high(found)) if found else None)
        for point, seconds, found in zip(calibration.points, medians, usual, strict=True)
    ]
    loops = {key for key, point in zip(keys, calibration.points, strict=True) if is_loop(point.kernel_class)}
    by_key = {key: seconds for key, seconds in zip(keys, medians, strict=True) if key not in loops}  # speeds: medians
    speeds = [_median([seconds / by_key[key] for key, seconds in e.seconds.items() if by_key.get(key)] or [1.0])
              for e in entries]  # fmt: skip
    apart = [max(found) / min(found) - 1 for found in times if len(found) > 1 and min(found) > 0]
    touches = [e.first_touch for e in entries if e.first_touch is not None]
    evicted = [e.evicted for e in entries if e.evicted is not None]
    note = (
        f"{NOTE_PREFIX} its times ({LOOPS_SMALLEST if states else LOOPS_MEDIAN}) in the {len(entries)} calibrations "
        f"made on this machine with these versions "
        f"({', '.join(e.when.replace('T', ' ') for e in entries)}); each calibration's points took "
        f"{', '.join(f'{s:.2f}×' for s in speeds)} those medians (median; a loop's kernels left out), "
        f"and a point's times read a median "
        f"{_median(apart or [0.0]):.0%} apart (slowest ÷ fastest − 1): how far this machine's speed moves between "
        f"calibrations{wake_note}. `neural-cost calibrate --kernels --fresh` starts over"
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
        evicted_seconds_per_byte=_median(evicted) if evicted else None,
    )
    probes = {  # each over the calibrations that probed this program's kernel of this class
        name: (kind, (min if states and is_loop(kind) else _median)([e.probes[name][1] for e in entries
                                                          if e.probes.get(name, ("",))[0] == kind]))
        for name, (kind, _) in calibration.probes.items()
    }  # fmt: skip
    wakes = [e.wakes for e in entries if e.wakes is not None]  # the states of the merged curves (as the times)
    usual_wakes = [e.wakes[1] for e in slower if e.wakes is not None] or [w[1] for w in wakes]  # as the times
    loop_wakes = (min(w[0] for w in wakes), median_high(usual_wakes)) if wakes else None
    return replace(fitted, probes=probes, loop_wakes=loop_wakes), [*kept, *entries]


def fastest_in_two_states(entries: Sequence[Entry]) -> bool:
    """Whether the merged calibrations' fastest loop passes ran in two host states: their wake-ups before those
    passes (``Entry.wakes[0]``) at least ``WAKES_APART`` apart, so some calibration's fastest times are the busy
    state's and the median of three can be whichever state two of them caught. A calibration kept from before
    them (``carried``) does not count: its times are not merged."""
    fast = [e.wakes[0] for e in entries if e.wakes is not None]
    return bool(fast) and apart(min(fast), max(fast))


def carried(older: Sequence[Entry], entries: Sequence[Entry]) -> list[Entry]:
    """Of the calibrations ``older`` than the merged ``entries``, the latest made within ``CARRIED_FOR`` of the
    newest of them that alone, beside them, is in the slower of two host states (``_split``), kept for its loop
    kernels' usual times and wake-up only; none where the merged ones saw two states themselves."""
    if _split(entries, ()) is not None:
        return []
    newest = _moment(entries[-1].when) if entries else None
    for entry in reversed(older):
        made = _moment(entry.when)
        if newest is None or made is None or not timedelta(0) <= newest - made <= CARRIED_FOR:
            continue
        if _split(entries, (entry,)) == [entry]:
            return [entry]
    return []


def _moment(when: str) -> datetime | None:
    try:
        return datetime.fromisoformat(when)
    except ValueError:
        return None


def _split(entries: Sequence[Entry], kept: Sequence[Entry]) -> list[Entry] | None:
    """The calibrations (of ``kept`` and ``entries``) whose usual passes ran in the slower of two host states, or
    None for one state: the smallest wake-up before a fastest pass (``entries``') and the slowest before a usual
    one at least ``WAKES_APART`` apart, the slower those past their geometric mean (as ``usual_loops`` splits a
    reading), and their merged usual wake-up (``median_high``) still ``WAKES_APART`` past that fastest one."""
    fast = [e.wakes[0] for e in entries if e.wakes is not None]
    seen = [e for e in (*kept, *entries) if e.wakes is not None]
    if not fast or not min(fast) > 0 or not seen:
        return None
    low, high = min(fast), max(e.wakes[1] for e in seen if e.wakes is not None)
    slower = [e for e in seen if e.wakes is not None and e.wakes[1] > dividing_line(low, high)]
    if not apart(low, high) or not apart(low, median_high([e.wakes[1] for e in slower if e.wakes])):
        return None
    return slower


def _slower_state(entries: Sequence[Entry], kept: Sequence[Entry]) -> tuple[list[Entry], str]:
    """``_split``'s slower calibrations ([] in one state) and the note's words for them, where they are not all
    of those merged (or one was kept from before them)."""
    slower = _split(entries, kept) or []
    if not slower or (not kept and len(slower) == sum(e.wakes is not None for e in entries)):
        return slower, ""
    note = (
        f"; a loop's kernels' usual times from the {len(slower)} made in the slower host state "
        f"({', '.join(e.when.replace('T', ' ') for e in slower)})"
        + (f", {kept[0].when.replace('T', ' ')} kept from before them, none of them in it" if kept else "")
    )
    return slower, note
