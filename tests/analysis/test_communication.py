"""Communication scored against a link, by hand.

One device of 8: a matmul (64,64)@(64,64) float32 — 524,288 FLOPs, 49,152 B — and a psum of its
(64,64) result (16,384 B payload) over 8 devices: wire 2·7/8·16,384 = 28,672 B, reduction FLOPs
7/8·4,096 = 3,584, memory 16,384 B read + 16,384 B written.
Spec: 1e12 FLOP/s, 1e11 B/s memory, no levels; link "ring" 1e9 B/s, 10 µs latency.
Kernel bound (each record its own kernel, no compiled program):
  matmul max(524.288 ns, 49,152 / 1e11 = 491.52 ns) = 524.288 ns
  psum   max(3.584 ns, 32,768 / 1e11 = 327.68 ns) = 327.68 ns      → 851.968 ns
Communication: 10 µs + 28,672 / 1e9 = 28.672 µs → 38.672 µs.
No overlap: 0.851968 + 38.672 = 39.523968 µs; perfect overlap: max = 38.672 µs (the headline).
Communication's share of the no-overlap step: 38.672 / 39.523968 = 97.84%.

Measured (a hand-built profile of 2 runs over the two kernels "mm" and "psum"): the psum
kernel's 100 µs over 2 runs = 50 µs per run is the measured communication; the mm kernel's
time is not communication.
"""

import pytest

from neural_cost import HardwareSpec, Operation, analyze_gap, estimate_operations
from neural_cost.core.kernels import Kernel
from neural_cost.core.profile import MeasuredKernel, Profile
from neural_cost.hardware.interconnect import Interconnect
from tests.helpers import cpu_measurement

OPS = (
    Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64), "float32"),
    Operation(
        "psum", "collective", ((64, 64),), (64, 64), "float32", attrs={"collective": "all_reduce", "group_size": 8}
    ),
)
LINK = Interconnect("ring", 1e9, 10e-6, "test")


def test_the_step_bound_with_and_without_overlap():
    spec = HardwareSpec("T", 1e12, 1e11, kind="cpu", interconnects=(LINK,))
    report = analyze_gap(estimate_operations(OPS), cpu_measurement((50e-6,) * 5), spec)
    comm = report.communication
    assert (comm.wire_bytes, comm.collectives, comm.link) == (28_672, 1, "ring")
    assert report.kernel_bound_seconds == pytest.approx(851.968e-9)
    assert comm.seconds == pytest.approx(38.672e-6)
    assert comm.no_overlap_seconds == pytest.approx(39.523968e-6)
    assert report.bound_seconds == comm.overlap_seconds == pytest.approx(38.672e-6)
    assert comm.share == pytest.approx(38.672 / 39.523968)
    assert report.bound_side == "communication"
    assert report.efficiency == pytest.approx(38.672e-6 / 50e-6)
    text = report.render(top=0)
    assert "communication: 28.7 kB per device over 1 collective on ring at 1.00 GB/s + 10.0 µs latency each" in text
    assert "with perfect overlap (the headline: a lower bound)" in text
    assert report.to_dict()["analysis"]["communication"]["overlap_seconds"] == pytest.approx(38.672e-6)


def test_without_a_link_the_bytes_are_said_and_not_scored():
    report = analyze_gap(estimate_operations(OPS), cpu_measurement((50e-6,) * 5), HardwareSpec("T", 1e12, 1e11))
    assert report.communication.seconds is None
    assert report.bound_seconds == pytest.approx(851.968e-9)  # the kernel bound alone
    assert "not scored: the spec lists no interconnect" in report.render(top=0)


def test_a_program_without_collectives_has_no_communication_line():
    report = analyze_gap(estimate_operations(OPS[:1]), cpu_measurement(), HardwareSpec("T", 1e12, 1e11))
    assert report.communication is None and "communication:" not in report.render(top=0)


def test_the_link_and_the_communication_survive_a_saved_report():
    import json

    from neural_cost.report.load import report_from_dict

    spec = HardwareSpec("T", 1e12, 1e11, kind="cpu", interconnects=(LINK,))
    report = analyze_gap(estimate_operations(OPS), cpu_measurement((50e-6,) * 5), spec)
    loaded = report_from_dict(json.loads(json.dumps(report.to_dict())))
    assert loaded.hardware.interconnects == (LINK,)
    assert loaded.bound_seconds == report.bound_seconds and loaded.communication == report.communication


KERNELS = (
    Kernel("mm", (0,), traffic_bytes=49_152, footprint_bytes=49_152),
    Kernel("psum", (1,), traffic_bytes=32_768, footprint_bytes=32_768),
)
JOINED = (
    "collective transfers: gloo worker events joined in order, waits for slower ranks included: a collective "
    "kernel's time is its call on the "
    "calling thread and its transfer on a gloo worker thread"
)


MEASURED = (MeasuredKernel(0, 40e-6, 2), MeasuredKernel(1, 100e-6, 2))  # mm 40 µs, psum 100 µs over 2 runs


def _profiled(notes=(JOINED,), kernels=MEASURED):
    spec = HardwareSpec("T", 1e12, 1e11, kind="cpu", interconnects=(LINK,))
    profile = Profile(
        runs=2, wall_seconds=400e-6, kernels=kernels, kernel_seconds=140e-6, source="torch.profiler", notes=notes
    )
    return analyze_gap(estimate_operations(OPS, kernels=KERNELS), cpu_measurement((50e-6,) * 5), spec, profile=profile)


def test_the_measured_communication_is_the_collective_kernels_time_per_run_beside_the_bound():
    report = _profiled()
    comm = report.communication
    assert report.kernel_bound_seconds == pytest.approx(851.968e-9)  # the same kernels as above
    assert comm.seconds == pytest.approx(38.672e-6)  # the bound is untouched by the profile
    assert comm.measured_seconds == pytest.approx(50e-6)  # psum's 100 µs / 2 runs; mm's 40 µs left out
    assert comm.measured_by == "profiled: gloo worker events joined in order, waits for slower ranks included"
    line = next(line for line in report.render(top=0).splitlines() if "communication:" in line)
    assert "latency each: 38.7 µs (97.8% of the no-overlap step) · measured 50.0 µs (profiled: gloo worker" in line
    record = report.to_dict()["analysis"]["communication"]
    assert record["measured_seconds"] == pytest.approx(50e-6)
    assert record["measured_by"] == "profiled: gloo worker events joined in order, waits for slower ranks included"


def test_without_a_profile_nothing_is_measured():
    spec = HardwareSpec("T", 1e12, 1e11, kind="cpu", interconnects=(LINK,))
    comm = analyze_gap(estimate_operations(OPS, kernels=KERNELS), cpu_measurement(), spec).communication
    assert (comm.measured_seconds, comm.measured_by) == (None, None)
    assert "measured" not in analyze_gap(estimate_operations(OPS), cpu_measurement(), spec).render(top=0)


def test_a_profile_that_could_not_join_the_transfers_measures_nothing_and_says_why():
    unjoined = (
        "collective transfers: not joined: profiled run 2: 1 gloo worker event for 2 collective kernel executions"
    )
    comm = _profiled(notes=(JOINED, unjoined)).communication
    assert comm.measured_seconds is None
    assert (
        comm.measured_by
        == "not measured: the transfers did not join their collective kernels (see the profile's notes)"
    )
    assert "· not measured: the transfers did not join" in _profiled(notes=(unjoined,)).render(top=0)


def test_a_collective_kernel_without_an_event_is_not_measured_never_zero():
    comm = _profiled(kernels=(MeasuredKernel(0, 40e-6, 2),)).communication
    assert comm.measured_seconds is None
    assert comm.measured_by == "not measured: 1 of the 1 collective kernels have no profiled event"


def test_a_profile_without_transfer_notes_is_labelled_by_its_profiler():
    comm = _profiled(notes=()).communication  # a device profile: the collective's own kernel time
    assert (comm.measured_seconds, comm.measured_by) == (pytest.approx(50e-6), "profiled: torch.profiler")


def test_the_measured_communication_survives_a_saved_report():
    import json

    from neural_cost.report.load import report_from_dict

    report = _profiled()
    loaded = report_from_dict(json.loads(json.dumps(report.to_dict())))
    assert loaded.communication == report.communication and loaded.communication.measured_seconds == pytest.approx(
        50e-6
    )
