"""The memory-axis benchmark's level refit (``benchmarks/memory_axis.py``): a class the calibration put on
main memory's axis is refitted on the level's from the same points, everything else left as it was."""

import pytest

from neural_cost.hardware.kernel_model import Point, fit_calibration, fit_class
from tests.analysis.test_kernel_bound import SPEC
from tests.helpers import load_benchmark

pytest.importorskip("torch")


def test_a_class_on_main_memorys_axis_is_refitted_on_the_levels_from_its_own_points():
    """Twelve ``elementwise`` points that ran 3× their main-memory time (1 µs … 2048 µs, the first six in L2 at a
    fifth of it): the calibration puts the class on main memory's axis (``test_expected``'s case); refitted, it is
    the level-axis fit of the same twelve points, and ``copy`` (on the level's axis already) is the same object."""
    mains = [2.0**i * 1e-6 for i in range(12)]
    points = [Point(kind, 0.0, m / 5 if i < 6 else m, 3 * m, f"{kind} {i}", main_memory_seconds=m)
              for kind in ("elementwise", "copy") for i, m in enumerate(mains)]  # fmt: skip
    calibration = fit_calibration("torch", SPEC, points)
    assert calibration.classes["elementwise"].memory_axis == "main"
    refitted = load_benchmark("memory_axis.py", "memory_axis_benchmark").on_level_axis(calibration)
    assert refitted.classes["elementwise"] == fit_class("elementwise", points[:12], "level")
    assert refitted.classes["elementwise"].memory_axis == "level"
    assert refitted.classes["copy"] is calibration.classes["copy"]
    assert refitted.points == calibration.points
