"""How fast this machine runs now, against its kernel calibration: the drift probes.

A kernel calibration keeps a few *drift probes* (``calibrate_kernels.probe_times``): of the framework's quick grid,
the longest program of each kernel family taking 50 µs to 2 ms (up to six; a calibration merged with an earlier one
measures that one's again, ``calibration_history.probes_before``), with its time at
calibration (the smallest of two passes). ``machine_drift`` re-runs them the same way and gives
the median of now ÷ then: 1.0 is the machine as calibrated, 1.3 everything 30% slower. The
expected time is of the machine as calibrated; a shared machine's slow spell moves the observed
time, and this says which happened. A ratio under ``SLOW_CALIBRATION`` says the opposite: the
calibration itself looks to have been measured in a slow spell (on a 2-core VM a TensorFlow calibration's probes
later ran at 0.54–0.73× their calibrated time, and a Keras CNN was expected 57% too slow), so the
note names it and the command that measures it again. One probe, a loop of small kernels, is read
apart from the median (``Drift.loop``): on a 2-core VM such loops ran 1.4–2.7× faster or slower
for tens of seconds at a time while the other probes held, and the note names it when it does. A
compiled loop's probe is read against its program's point the curves were fitted on (``fitted_loop``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.errors import NeuralCostError
from ..core.units import plural
from ..hardware.kernel_model import KernelCalibration
from .calibrate_kernels import measure_once_more
from .calibration_history import is_loop

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter, MicroProgram


#: A drift ratio under this says the calibration ran slower than the machine runs now: it looks to
#: have been measured in a slow spell (a stall never makes a run faster), its expectations too slow.
SLOW_CALIBRATION = 0.8
#: Probes whose ratios lie this far apart (largest ÷ smallest) are named in the note: their median
#: hides a machine whose speed moved for some kernels only (on a 2-core VM small convolutions split
#: over both cores ran 2× slower in one spell while batched ones moved under 10%).
SPREAD_NAMED = 1.5


@dataclass(frozen=True, slots=True)
class Drift:
    """How fast this machine runs the calibration's drift probes now, against their time at calibration."""

    #: The median of ``ratios``: 1.0 is the machine as calibrated, 1.3 everything 30% slower.
    ratio: float
    #: (program, its time now ÷ its calibrated time), one per probed program.
    ratios: tuple[tuple[str, float], ...]
    #: The calibration's framework (the command that measures it again names it).
    framework: str = ""
    #: (program, its time now ÷ its time at calibration: ``fitted_loop``) of the loop probe
    #: (``calibration_history.is_loop``), apart from the median: small kernels in a loop can run at another speed
    #: while the rest holds.
    loop: tuple[str, float] | None = None

    @property
    def calibration_slow(self) -> bool:
        """The probes run well under their calibrated time: the calibration looks to have run in a slow spell."""
        return self.ratio < SLOW_CALIBRATION

    def spread(self) -> str:
        """``; by probe 0.50–1.50×, add 1 the furthest from 1 (0.50×)`` when the probes read at least
        ``SPREAD_NAMED`` apart, else nothing."""
        values = [ratio for _, ratio in self.ratios]
        if len(values) < 2 or min(values) <= 0 or max(values) / min(values) < SPREAD_NAMED:
            return ""
        name, far = max(self.ratios, key=lambda item: abs(math.log(item[1])))  # every ratio > 0 here
        return f"; by probe {min(values):.2f}–{max(values):.2f}×, {name} the furthest from 1 ({far:.2f}×)"

    def looping(self) -> str:
        """``; a loop of small kernels (scan …) at 0.37× its time at calibration`` when the loop probe reads at
        least ``SPREAD_NAMED`` apart from the median, else nothing; slower, it says the expected time has them at
        their calibrated speed, and what the usual-loops line (``Expected.usual_seconds``) has: the probe can read
        slower than the usual line's loops (a 512-wide scan's probe 2.37× where that line read 1.25×)."""
        if self.loop is None or self.ratio <= 0 or self.loop[1] <= 0:
            return ""
        name, ratio = self.loop
        if max(ratio / self.ratio, self.ratio / ratio) < SPREAD_NAMED:
            return ""
        usual = (
            "; the expected time has them at their calibrated speed (an `expected with its loops as usual` line, where "
            "there is one, at the median of their calibration passes)"
        )
        usual = usual if ratio > self.ratio else ""  # slower: say what the expected time assumes of them
        return (
            f"; a loop of small kernels ({name}) at {ratio:.2f}× its time at calibration: loops of small kernels run "
            f"at another speed now than the rest{usual}"
        )

    def note(self) -> str:
        probes = f"machine now: {plural(len(self.ratios), 'calibration probes')} re-run at {self.ratio:.2f}× their time"
        if self.calibration_slow:
            which = f" --framework {self.framework}" if self.framework else ""
            return (
                f"{probes} at calibration (median{self.spread()}): the calibration looks to have been measured in a "
                f"slow spell and to expect this machine too slow; `neural-cost calibrate --kernels{which}` measures it "
                f"again{self.looping()}"
            )
        return (
            f"{probes} at calibration (median{self.spread()}; a shared machine's slow spell moves the observed time, "
            f"not the expected one){self.looping()}"
        )


def fitted_loop(calibration: KernelCalibration, program: MicroProgram, kind: str, seconds: float) -> float:
    """What a loop probe is read against: a compiled loop's (a program with a shorter twin, its kernels timed off
    the loop's wall time as the grid times them) is its program's largest point of class ``kind`` in
    ``calibration``, the one the curves were fitted on; else, or where the calibration has none, its own time
    at calibration (``seconds``). A loop's kernels can run at two speeds 2× apart within one calibration (a
    512-wide scan's dot read 10.3 µs a step over the grid's six passes and 28.9 µs in the two probe passes
    after them): against a probe time of the slow one, loops running slow read as calibrated while the
    curves expect them fast."""
    if program.shorter is None:
        return seconds
    found = [p.measured_seconds for p in calibration.points if p.name == program.name and p.kernel_class == kind]
    return max(found) if found and max(found) > 0 else seconds


def machine_drift(adapter: FrameworkAdapter, calibration: KernelCalibration, *, passes: int = 2) -> Drift | None:
    """Re-measure ``calibration``'s drift probes (a few quick-grid programs, measured as they
    were at calibration: the smallest of ``passes``) and compare: is the machine as fast now as
    when it was calibrated? None when the calibration has no probes (made before they existed)
    or none can be re-run here."""
    probes = calibration.probes
    if not probes:
        return None
    ratios: list[tuple[str, float]] = []
    loops: list[tuple[str, float]] = []
    for program in adapter.microbenchmarks(True):
        if program.name not in probes:
            continue
        kind, seconds = probes[program.name]
        try:
            found = measure_once_more(
                adapter, calibration.hardware, program, passes, calibration.first_touch_seconds_per_byte
            )
        except NeuralCostError:
            continue
        point = None if found is None else found[0]
        if point is not None and point.kernel_class == kind and seconds > 0:
            if is_loop(kind):
                loops.append((program.name, point.measured_seconds / fitted_loop(calibration, program, kind, seconds)))
            else:
                ratios.append((program.name, point.measured_seconds / seconds))
    if not ratios:
        return None
    median = statistics.median(ratio for _, ratio in ratios)
    return Drift(median, tuple(ratios), adapter.framework, loops[0] if loops else None)
