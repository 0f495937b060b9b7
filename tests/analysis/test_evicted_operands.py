"""Operands a cache no longer holds (``analysis/kernel_extras.py``, ``Kernel.reuse``): how far back eager
PyTorch's kernels last used their memory, and what an expected time adds for the regions further back than the
level a kernel is placed at holds."""

from __future__ import annotations

import json

import pytest

from neural_cost import Coverage, HardwareSpec, Kernel, Operation, Trace, analyze_gap, estimate_trace, load_report
from neural_cost.analysis.expected import expected_time
from neural_cost.core.errors import RecordError
from neural_cost.core.kernels import COLD_RESULTS_FROM
from neural_cost.hardware.kernel_model import KernelCalibration
from neural_cost.hardware.spec import MemoryLevel
from tests.helpers import cpu_measurement

LEVELS = (
    MemoryLevel("L1d", 32_768, 1e12, per_core=True, instances=2),
    MemoryLevel("L2", 1_048_576, 500e9, per_core=True, instances=2),  # holds 2 × 1 MiB = 2,097,152 B in all
    MemoryLevel("DRAM", 1 << 36, 100e9),
)
SPEC = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu", memory_levels=LEVELS)
OPS = (
    # 64 × 1024 float32: two 256 KiB inputs and a 256 KiB result, 786,432 B (L2); 65,536 FLOPs (65.5 ns)
    Operation("add", "elementwise", ((64, 1024), (64, 1024)), (64, 1024), attrs={"op": "add"}),
    # 128 × 1024 float32: a 512 KiB input and a 512 KiB result, 1,048,576 B: exactly L2's one instance
    Operation("neg", "elementwise", ((128, 1024),), (128, 1024), attrs={"op": "neg"}),
    # 64³: 524,288 FLOPs (524 ns) over 49,152 B (98 ns at L2): compute-bound
    Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64)),
    # 1024 × 1024: 12 MiB, past L2: main memory
    Operation("big", "elementwise", ((1024, 1024), (1024, 1024)), (1024, 1024), attrs={"op": "add"}),
)
FAR, NEAR = 3_000_000, 100  # bytes touched since: more than L2 holds (2,097,152), and well under


def _kernels(reuse: bool) -> tuple[Kernel, ...]:
    def regions(*found):
        return found if reuse else ()

    return (
        Kernel("add", (0,), traffic_bytes=786_432, footprint_bytes=786_432,
               reuse=regions((262_144, FAR, False), (262_144, NEAR, False), (262_144, 5_000_000, True))),
        Kernel("neg", (1,), traffic_bytes=1_048_576, footprint_bytes=1_048_576,
               reuse=regions((524_288, FAR, False), (524_288, FAR, True))),
        Kernel("mm", (2,), traffic_bytes=49_152, footprint_bytes=49_152, reuse=regions((16_384, FAR, False))),
        Kernel("big", (3,), traffic_bytes=12_582_912, footprint_bytes=12_582_912,
               reuse=regions((4_194_304, FAR, False))),
    )  # fmt: skip


def _expected(reuse: bool, evicted_seconds_per_byte: float | None = None):
    trace = Trace(OPS, Coverage.full(OPS), kernels=_kernels(reuse), kernel_source="hand-written", framework="torch")
    calibration = KernelCalibration(
        "torch", SPEC, {}, machine={}, date="2026-12-05", evicted_seconds_per_byte=evicted_seconds_per_byte
    )
    return expected_time(estimate_trace(trace), calibration, machine={})


def test_a_memory_bound_kernel_at_a_cache_level_reads_its_evicted_regions_at_main_memorys_bandwidth():
    """No class has a curve: each kernel is at its roofline bound, plus its evicted regions at 100 GB/s.

    - add (L2, 786,432 B at 500 GB/s = 1.572864 µs): its first input was last in use 3,000,000 B ago (more than
      L2's 2,097,152: evicted, 262,144 B), its second 100 B ago (held), its result (only written) 5,000,000 B ago
      and under ``COLD_RESULTS_FROM`` (evicted, 262,144 B): 524,288 B more at 100 GB/s, 5.24288 µs.
    - neg (L2, 1,048,576 B: 2.097152 µs): its input evicted (524,288 B, 5.24288 µs); its result, 524,288 B, is
      not under ``COLD_RESULTS_FROM`` (the grid writes such results cold: its curve holds that cost).
    - mm: compute-bound (0.524288 µs), but a product (``REUSED_GRID``: its grid reuses every operand call after
      call), so its evicted input counts too: 16,384 B, 0.16384 µs.
    - big: a pointwise kernel at main memory (125.82912 µs), nothing added.

    In all 3 kernels, 1,064,960 B, 10.6496 µs."""
    assert COLD_RESULTS_FROM == 524_288
    rows = {row.name: row.seconds for row in _expected(True).rows}
    plain = {row.name: row.seconds for row in _expected(False).rows}
    assert plain["add"] == pytest.approx(1.572864e-6) and plain["neg"] == pytest.approx(2.097152e-6)
    assert rows["add"] == pytest.approx(1.572864e-6 + 5.24288e-6)
    assert rows["neg"] == pytest.approx(2.097152e-6 + 5.24288e-6)
    assert plain["mm"] == pytest.approx(0.524288e-6) and rows["mm"] == pytest.approx(0.524288e-6 + 0.16384e-6)
    assert rows["big"] == plain["big"] == pytest.approx(125.82912e-6)
    notes = _expected(True).notes
    assert (
        "evicted operands: 3 kernels move 1.06 MB their calibration had in cache, last in use further back than the "
        "caches hold, at main memory's bandwidth: 10.6 µs of the expected time"
    ) in notes
    assert not any(note.startswith("evicted operands") for note in _expected(False).notes)


def test_a_measured_cost_per_evicted_byte_replaces_main_memorys_bandwidth():
    """With the calibration's ``evicted_seconds_per_byte`` at 4e-11 s (25 GB/s, where main memory streams
    100 GB/s), the same 1,064,960 evicted bytes cost 42.5984 µs: add 524,288 B → 20.97152 µs, neg 524,288 B →
    20.97152 µs, mm 16,384 B → 0.65536 µs; the note gives the rate."""
    rows = {row.name: row.seconds for row in _expected(True, 4e-11).rows}
    assert rows["add"] == pytest.approx(1.572864e-6 + 20.97152e-6)
    assert rows["neg"] == pytest.approx(2.097152e-6 + 20.97152e-6)
    assert rows["mm"] == pytest.approx(0.524288e-6 + 0.65536e-6)
    assert (
        "evicted operands: 3 kernels move 1.06 MB their calibration had in cache, last in use further back than the "
        "caches hold, at 25.0 GB/s, the calibration's measured cost of an evicted operand: 42.6 µs of the expected time"
    ) in _expected(True, 4e-11).notes


def test_a_products_evicted_regions_count_at_any_level_and_its_large_results_too():
    """A 1024 × 512 by 512 × 1024 product (2 MiB + 2 MiB inputs, a 4 MiB result: 8,388,608 B, past L2: main
    memory, 83.88608 µs; 1,073,741,824 FLOPs at 1 TFLOP/s: 1,073.741824 µs, compute-bound), its weights last used
    3,000,000 B ago and its result's memory 5,000,000 B ago, its input just written: 2,097,152 + 4,194,304 =
    6,291,456 B at 100 GB/s, 62.91456 µs. The same shapes as an elementwise add of three operands at main memory
    would add nothing (the pointwise grid streams from main memory already)."""
    mm = Operation("mm", "matmul", ((1024, 512), (512, 1024)), (1024, 1024))
    reuse = ((2_097_152, NEAR, False), (2_097_152, FAR, False), (4_194_304, 5_000_000, True))
    kernel = Kernel("mm", (0,), traffic_bytes=8_388_608, footprint_bytes=8_388_608, reuse=reuse)
    trace = Trace((mm,), Coverage.full((mm,)), kernels=(kernel,), framework="torch")
    row = expected_time(estimate_trace(trace), KernelCalibration("torch", SPEC, {}), machine={}).rows[0]
    assert row.kernel_class == "matmul" and row.seconds == pytest.approx(1_073.741824e-6 + 62.91456e-6)


def test_a_kernel_brings_from_main_memory_no_more_than_it_moves():
    """An embedding lookup of 120 tokens in an 8,192 × 240 float32 table: its record reads the 120 rows (115,200 B)
    and the 960 B of token ids and writes 115,200 B, 231,360 B (L2: 0.46272 µs at 500 GB/s; no FLOPs). Its table
    (7,864,320 B) and ids were last in use 3,000,000 B ago, past L2: the regions sum to 7,865,280 B, but the kernel
    moves 231,360 B, so 231,360 B are evicted, 2.3136 µs at 100 GB/s (78.65 µs for the whole table)."""
    lookup = Operation(
        "embedding", "embedding", ((8192, 240), (1, 120)), (1, 120, 240), input_dtypes=("float32", "int64")
    )
    reuse = ((7_864_320, FAR, False), (960, FAR, False), (115_200, NEAR, True))
    kernel = Kernel("embedding", (0,), traffic_bytes=231_360, footprint_bytes=231_360, reuse=reuse)
    trace = Trace((lookup,), Coverage.full((lookup,)), kernels=(kernel,), framework="torch")
    estimate = estimate_trace(trace)
    cost = estimate.by_operation[0]
    assert (cost.read_bytes, cost.write_bytes) == (116_160, 115_200)
    row = expected_time(estimate, KernelCalibration("torch", SPEC, {}), machine={}).rows[0]
    assert row.seconds == pytest.approx(0.46272e-6 + 2.3136e-6)


def test_a_region_is_in_main_memory_only_past_the_largest_cache_and_an_unmeasured_cache_still_holds_it():
    """A 2,048-element add (8 KiB a tensor, 24,576 B: L1d, 24.576 ns at 1 TB/s) whose first input was last in use
    100,000 B ago: past L1d's 65,536 B in all but held by L2 (2,097,152): nothing added; its second input
    3,000,000 B ago: past both, 8,192 B at 100 GB/s = 81.92 ns. With an L3 of 32 MiB whose bandwidth was never
    measured, the first test's add (an input and its result 3,000,000 and 5,000,000 B ago) is held there: nothing
    added (its rate is not known); with that L3 measured slower than main memory (no cache's figure) it counts as
    not holding them, 5.24288 µs again."""
    small = Operation("small", "elementwise", ((32, 64), (32, 64)), (32, 64), attrs={"op": "add"})
    kernel = Kernel("small", (0,), traffic_bytes=24_576, footprint_bytes=24_576,
                    reuse=((8_192, 100_000, False), (8_192, FAR, False), (8_192, NEAR, True)))  # fmt: skip
    trace = Trace((small,), Coverage.full((small,)), kernels=(kernel,), framework="torch")
    at_l1 = expected_time(estimate_trace(trace), KernelCalibration("torch", SPEC, {}), machine={}).rows[0]
    assert at_l1.seconds == pytest.approx(24.576e-9 + 81.92e-9)
    for l3, added in ((None, 0.0), (50e9, 5.24288e-6)):
        levels = (*LEVELS[:2], MemoryLevel("L3", 33_554_432, l3), LEVELS[2])
        spec = HardwareSpec("T", peak_flops=1e12, memory_bandwidth=100e9, kind="cpu", memory_levels=levels)
        trace = Trace(OPS, Coverage.full(OPS), kernels=_kernels(True), framework="torch")
        rows = {row.name: row.seconds for row in expected_time(estimate_trace(trace), KernelCalibration(
            "torch", spec, {}), machine={}).rows}  # fmt: skip
        assert rows["add"] == pytest.approx(1.572864e-6 + added)


def test_the_bound_does_not_move():
    """The bound scores each kernel at its level's bandwidth, whatever the reuse says."""
    report, plain = (
        analyze_gap(estimate_trace(Trace(OPS, Coverage.full(OPS), kernels=_kernels(reuse))), cpu_measurement(), SPEC)
        for reuse in (True, False)
    )
    assert report.bound_seconds == plain.bound_seconds and report.kernel_rows == plain.kernel_rows


def test_reuse_round_trips_through_a_saved_report_and_bad_regions_are_refused(tmp_path):
    kernels = _kernels(True)
    assert Kernel.from_dict(kernels[0].to_dict()) == kernels[0]
    assert "reuse" not in _kernels(False)[0].to_dict()  # none known: nothing written
    report = analyze_gap(estimate_trace(Trace(OPS, Coverage.full(OPS), kernels=kernels)), cpu_measurement(), SPEC)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report.to_dict()))
    assert [kernel.reuse for kernel in load_report(path).estimate.kernels] == [kernel.reuse for kernel in kernels]
    with pytest.raises(RecordError, match=r"Kernel 'k' reuse\[0\]=\(1, 2\) must be \(bytes, since, written\)"):
        Kernel("k", reuse=((1, 2),))
    with pytest.raises(RecordError, match=r"Kernel 'k' reuse\[0\] since=-1 must be a non-negative integer"):
        Kernel("k", reuse=((1, -1, False),))
    with pytest.raises(RecordError, match=r"reuse\[0\] written=1 must be True or False"):
        Kernel("k", reuse=((1, None, 1),))


def test_eager_pytorch_kernels_say_how_far_back_their_memory_was_in_use():
    """x (256 × 4 float32, 4,096 B) → a = x + 1 → b = a · 2 → a 4,000,000 B tensor of ones → c = x − 1. Footprints:
    add, mul and sub 8,192 B each (their input and result), ones 4,000,000 B: the run touches 4,024,576 B.

    - add reads x, last used by sub at the run's end: 0 B since (the run before). Its result a, last used by
      mul: since mul's end, ones and sub and then nothing before add, 4,000,000 + 8,192 = 4,008,192 B.
    - mul reads a just written: 0 B. Its result b is used by mul alone: the run after mul, 4,016,384 B.
    - ones' result: the run after it (sub, 8,192) and before it (add, mul, 16,384): 24,576 B.
    - sub reads x, last used by add: mul and ones since, 4,008,192 B; its result, 4,016,384 B."""
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import adapter_for

    class Steps(torch.nn.Module):
        def forward(self, x):
            a = x + 1
            b = a * 2
            big = torch.ones(1000, 1000)
            return b, x - 1, big

    trace = adapter_for("torch").trace(Steps(), (torch.randn(256, 4),))
    found = {kernel.name: kernel.reuse for kernel in trace.kernels}
    assert found == {
        "add": ((4_096, 0, False), (4_096, 4_008_192, True)),
        "mul": ((4_096, 0, False), (4_096, 4_016_384, True)),
        "ones": ((4_000_000, 24_576, True),),
        "sub": ((4_096, 4_008_192, False), (4_096, 4_016_384, True)),
    }
