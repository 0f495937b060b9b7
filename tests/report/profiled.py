"""A hand-built estimate with four kernels and a hand-built profiled pass, every number derived here.

Spec "P": peak 1e12 FLOP/s, main memory 1e11 B/s (100 GB/s), no cache levels (every kernel at main memory).
Records (float32, 4 bytes an element):
  0 mm  (64,64)@(64,64), scope layer: FLOPs 2·64³ = 524,288; read 2·64·64·4 = 32,768 B, write 16,384 B
  1 add (64,64)+(64,64), scope layer: FLOPs 4,096; read 32,768 B, write 16,384 B
  2 big (1024,1024)+(1024,1024), scope tail: FLOPs 1,048,576; read 8,388,608 B, write 4,194,304 B (12,582,912 B)
  sort x1 is unmodeled (coverage: 4 executed, 3 modeled, 1 unmodeled), at its elementwise floor 1,024 FLOPs,
  8,192 bytes.
Kernels (executions 1 each):
  0 fusion.0 runs mm and add, 49,152 B: compute 528,384 / 1e12 = 528.384 ns, memory 49,152 / 1e11 = 491.52 ns
    → bound 528.384 ns (compute-bound)
  1 copy.1 runs no record, 2,000,000 B → 20 µs
  2 big.2 runs big, 12,582,912 B → 125.82912 µs (compute 1.048576 µs)
  3 sort.3 runs no record, unmodeled ("sort",), 1,000,000 B → 10 µs
  kernel bound 0.528384 + 20 + 125.82912 + 10 = 156.357504 µs. Observed: median 400 µs → efficiency 39.09%.
Profile: 2 runs, wall 800 µs (400 µs per run); per kernel, over both runs (2 events each):
  fusion.0 4 µs → 2 µs per run: eff 528.384 / 2,000 = 26.4192% → "26.4%"
  copy.1  50 µs → 25 µs per run: eff 20 / 25 = 80.0%
  big.2  500 µs → 250 µs per run: eff 125.82912 / 250 = 50.331648% → "50.3%"
  sort.3  46 µs → 23 µs per run: eff 10 / 23 = 43.478% → "43.5%"
  kernel_seconds (their union: they never overlap) 600 µs → 300 µs per run; outside 800 − 600 = 200 µs → 100 µs
  per run, 100 / 400 = 25.0% of the run.
Time coverage: modeled 2 + 25 + 250 = 277 µs of 300 µs per run = 92.333% → "92.3%"; sort 23 / 300 = 7.667% → "7.7%".
Operation rows (each at max(compute, memory) at main memory, as the per-operation table scores them):
  mm: compute 524.288 ns, memory 49,152 / 1e11 = 491.52 ns → 524.288 ns; add: compute 4.096 ns → 491.52 ns.
  fusion.0's 2 µs per run split by bounds: mm 524.288 / 1,015.808 = 16/31 → 32/31 µs = 1.032258 µs "1.0 µs",
  add 15/31 → 30/31 µs = 0.967742 µs "967.7 ns"; both shared (no efficiency of their own).
  big: its kernel alone, 250 µs, not shared: eff 125.82912 / 250 = 50.3%.
Scope rows: layer = mm + add = 2 µs; its efficiency compares the kernel bound behind that time (fusion.0's
  528.384 ns, split 16/31 + 15/31 and summed back), never its unfused bound (983.04 ns): 528.384 / 2,000 =
  26.4192% → "26.4%"; tail = big = 250 µs (eff 125.82912 / 250 = 50.3%).
Events (one per execution; each run takes 400 µs of wall, kernels in turn on thread 0, run 2 starts at 400 µs):
  run 1: fusion.0 [0, 2) µs, copy.1 [2, 27), big.2 [27, 277), sort.3 [277, 300)
  run 2: the same, 400 µs later.
"""

from neural_cost import Coverage, HardwareSpec, Kernel, Operation, Trace, analyze_gap, estimate_trace
from neural_cost.core.profile import MeasuredKernel, Profile, ProfileEvent
from tests.helpers import cpu_measurement

OPS = (
    Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64), "float32", scope="layer"),
    Operation("add", "elementwise", ((64, 64), (64, 64)), (64, 64), "float32", scope="layer", attrs={"op": "add"}),
    Operation(
        "big", "elementwise", ((1024, 1024), (1024, 1024)), (1024, 1024), "float32", scope="tail", attrs={"op": "add"}
    ),
)
COVERAGE = Coverage(total=4, modeled=3, unmodeled=(("sort", 1),), unmodeled_work=(("sort", 1_024, 8_192),))
KERNELS = (
    Kernel("fusion.0", (0, 1), traffic_bytes=49_152, footprint_bytes=49_152, scopes=("layer",), kind="fusion"),
    Kernel("copy.1", (), traffic_bytes=2_000_000, footprint_bytes=2_000_000, kind="copy"),
    Kernel("big.2", (2,), traffic_bytes=12_582_912, footprint_bytes=12_582_912, scopes=("tail",), kind="fusion"),
    Kernel("sort.3", (), traffic_bytes=1_000_000, footprint_bytes=1_000_000, kind="custom-call", unmodeled=("sort",)),
)
SPEC = HardwareSpec("P", peak_flops=1e12, memory_bandwidth=1e11, kind="cpu")
OBSERVED = (400e-6,) * 5
US = 1e-6
#: (kernel, start µs, duration µs) of one run
RUN = ((0, 0, 2), (1, 2, 25), (2, 27, 250), (3, 277, 23))
EVENTS = tuple(
    ProfileEvent(kernel, (offset + start) * US, duration * US) for offset in (0, 400) for kernel, start, duration in RUN
)
PROFILE = Profile(
    runs=2,
    wall_seconds=800 * US,
    kernels=(
        MeasuredKernel(0, 4 * US, 2),
        MeasuredKernel(1, 50 * US, 2),
        MeasuredKernel(2, 500 * US, 2),
        MeasuredKernel(3, 46 * US, 2),
    ),
    kernel_seconds=600 * US,
    source="test profiler",
    events=EVENTS,
)


def estimate():
    trace = Trace(OPS, COVERAGE, kernels=KERNELS, kernel_source="hand-written")
    return estimate_trace(trace)


def profiled_report(profile=PROFILE, threshold=0.7, samples=OBSERVED, profile_notes=()):
    """The report with ``profile`` (None: none). A 0.7 threshold lets the 75% operation share pass."""
    return analyze_gap(
        estimate(),
        cpu_measurement(samples),
        SPEC,
        coverage_threshold=threshold,
        profile=profile,
        profile_notes=profile_notes,
    )
