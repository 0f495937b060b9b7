"""Golden renders, compared whole. The seed's Linear(768→1000) in float16 at batch 32.

Hand derivations for the numbers in the goldens:
  FLOPs  2·32·768·1000 = 49,152,000                                 → "49.2 MFLOP"
  bytes  read 2·(32·768 + 768·1000) = 1,585,152, write 2·32·1000 = 64,000,
         total 1,649,152                                           → "1.65 MB"; intensity 49,152,000/1,649,152 = 29.80
  M3 Pro (7.4 TFLOP/s, 150 GB/s): compute 49.152e6/7.4e12 = 6.64 µs, memory 1.649152e6/150e9 = 10.99 µs → bound 11.0 µs
  samples 40, 44, 40, 42, 38 µs: median 40.0 µs; stdev sqrt(20.8/4) = 2.28 µs
  efficiency 10.994/40 = 27.5%; achieved 49.152e6/40e-6 = 1.23 TFLOP/s and 1.649152e6/40e-6 = 41.2 GB/s
  gap 40 - 10.994 = 29.0 µs, 40/10.994 = 3.6×
  The estimate has no kernels (no compiled program read), so the one record is scored as its own kernel: the
  kernel bound is its max(6.64, 10.99) = 11.0 µs, equal to the program roofline max(compute, compiled traffic at
  main memory), and compiled traffic = unfused traffic = compulsory = 1,649,152 B → "1.65 MB" (intensity of
  compiled traffic 29.80 FLOP/B). The specs list no memory levels, so all 1.65 MB is scored at "main memory".
  H100 SXM (float16 989 TFLOP/s, 3.35 TB/s): compute 49.152e6/989e12 = 49.7 ns, memory 1.649152e6/3.35e12 = 492.3 ns,
         efficiency 0.4923/40 = 1.2%, 40/0.4923 = 81.3×
  5 µs observed: efficiency 10.994/5 = 219.9%; achieved 9.83 TFLOP/s, 330 GB/s; 5 µs is below the compute time
         (6.64 µs) and the compulsory floor (10.994 µs): the above-100% finding names both
The device line prints the peak of each dtype the work uses (float16 here) and the bandwidth it scored with:
  M3 Pro 7.4e12 → "7.40 TFLOP/s", 150e9 → "150 GB/s"; H100 float16 989e12 → "989 TFLOP/s", 3.35e12 → "3.35 TB/s"
Coverage, operations: (modeled + free) / executed = 1/1 = 100.0%, or (1 + 2)/10 = 30.0% in the low-coverage render.
Coverage, work: the lower of the FLOP and byte shares in modeled operations, unmodeled ones at their elementwise
floor (inputs read once, outputs written once, 1 FLOP per output element). Low-coverage render:
  sort x4 on float16 (32, 768): FLOPs 4·24,576 = 98,304; bytes 4·(49,152 read + 49,152 written) = 393,216
  threefry2x32 x3, four uint32 (1000,) in, two out: FLOPs 3·2,000 = 6,000; bytes 3·(16,000 + 8,000) = 72,000
  FLOP share 49,152,000 / (49,152,000 + 104,304) = 99.78%; byte share 1,649,152 / (1,649,152 + 465,216)
  = 1,649,152 / 2,114,368 = 77.997% → work ≤ 77.9% (rounded down; a ceiling: sort and threefry2x32 do more
  than their floor, so the modeled share is at most that)
"""

from neural_cost import Coverage, HardwareSpec, analyze_gap
from tests.helpers import M3_PRO, cpu_measurement, seed_estimate

NORMAL = """\
Neural cost gap analysis
  coverage: operations 100.0% · work 100.0% (of 1 operation: modeled 1, free 0)
  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for M3 Pro (kind unknown; user-supplied): float16 \
7.40 TFLOP/s; bandwidth 150 GB/s
  inputs: x (32, 768) · batch 32 (leading dim of x)
  timed runs: 5 after 3 warmup · sync: none needed
  work: 49.2 MFLOP (float16), intensity 29.80 FLOP/B of compiled traffic
  traffic: compulsory 1.65 MB · compiled = unfused (no compiled program read) · unfused 1.65 MB (read 1.59 MB, \
write 64.0 kB)
  bound: 11.0 µs, the sum of 1 operation's own bound (each its own kernel; program roofline 11.0 µs: compute 6.6 µs, \
memory 11.0 µs at main memory)
  traffic by level: main memory 1.65 MB (the spec names no cache levels: every kernel is scored at main-memory \
bandwidth)
  compulsory floor: 11.0 µs (1.65 MB of inputs, parameters and outputs moved once)
  observed: 40.0 µs ± 2.3 µs (median ± stdev of 5 runs; min 38.0 µs)
  roofline efficiency: 27.5% (memory-bound)
  achieved: 1.23 TFLOP/s, 41.2 GB/s of unfused traffic
  next: Memory-bound: the bytes are moved by classifier 100.0% (of 1 operation).
  next: Observed is 3.6× the bound: 29.0 µs above it, 29.0 µs per executed operation (1) — more than dispatch \
costs: profile the largest rows (classifier first) for slow kernels, layout changes or synchronisation.
  top 1 of 1 operations by share of bound:
  #  operation   kind         FLOPs    bytes  FLOP/B   share
  1  classifier  linear  49.2 MFLOP  1.65 MB   29.80  100.0%
"""

LOW_COVERAGE = """\
Neural cost gap analysis
  coverage: operations 30.0% · work ≤ 77.9% (of 10 equations: modeled 1, free 2, unmodeled 7: sort x4, \
threefry2x32 x3)
  WARNING: Low coverage: only 30.0% of the traced equations were modeled or free; at most 77.9% of the work \
(FLOPs and bytes, unmodeled equations at their elementwise floor, the least they can do) is in modeled \
equations; the roofline bound and efficiency describe part of the workload, not all of it.
  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for M3 Pro (kind unknown; user-supplied): float16 \
7.40 TFLOP/s; bandwidth 150 GB/s
  inputs: x (32, 768) · batch 32 (leading dim of x)
  timed runs: 5 after 3 warmup · sync: none needed
  work: 49.2 MFLOP (float16), intensity 29.80 FLOP/B of compiled traffic
  traffic: compulsory 1.65 MB · compiled = unfused (no compiled program read) · unfused 1.65 MB (read 1.59 MB, \
write 64.0 kB)
  bound: 11.0 µs, the sum of 1 operation's own bound (each its own kernel; program roofline 11.0 µs: compute 6.6 µs, \
memory 11.0 µs at main memory)
  traffic by level: main memory 1.65 MB (the spec names no cache levels: every kernel is scored at main-memory \
bandwidth)
  compulsory floor: 11.0 µs (1.65 MB of inputs, parameters and outputs moved once)
  observed: 40.0 µs ± 2.3 µs (median ± stdev of 5 runs; min 38.0 µs)
  roofline efficiency: 27.5% (memory-bound)
  achieved: 1.23 TFLOP/s, 41.2 GB/s of unfused traffic
  warning: 7 of 10 equations have no cost rule (sort x4, threefry2x32 x3); their time is in the observed figure \
but not in the bound.
  next: Memory-bound: the bytes are moved by classifier 100.0% (of 1 operation).
  next: Observed is 3.6× the bound: 29.0 µs above it, 29.0 µs per executed operation (1) — more than dispatch \
costs: profile the largest rows (classifier first) for slow kernels, layout changes or synchronisation.
  top 1 of 1 operations by share of bound:
  #  operation   kind         FLOPs    bytes  FLOP/B   share
  1  classifier  linear  49.2 MFLOP  1.65 MB   29.80  100.0%
"""

DEVICE_MISMATCH = """\
Neural cost gap analysis
  coverage: operations 100.0% · work 100.0% (of 1 operation: modeled 1, free 0)
  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for H100 SXM (gpu; table: NVIDIA H100 datasheet): \
float16 989 TFLOP/s; bandwidth 3.35 TB/s
  Device mismatch: the work ran on a cpu (Intel Xeon Platinum 8480C) but is scored against gpu peaks (H100 SXM); \
the efficiency describes a device the work did not run on. Score it against the device it ran on.
  inputs: x (32, 768) · batch 32 (leading dim of x)
  timed runs: 5 after 3 warmup · sync: none needed
  work: 49.2 MFLOP (float16), intensity 29.80 FLOP/B of compiled traffic
  traffic: compulsory 1.65 MB · compiled = unfused (no compiled program read) · unfused 1.65 MB (read 1.59 MB, \
write 64.0 kB)
  bound: 492.3 ns, the sum of 1 operation's own bound (each its own kernel; program roofline 492.3 ns: compute \
49.7 ns, memory 492.3 ns at main memory)
  traffic by level: main memory 1.65 MB (the spec names no cache levels: every kernel is scored at main-memory \
bandwidth)
  compulsory floor: 492.3 ns (1.65 MB of inputs, parameters and outputs moved once)
  observed: 40.0 µs ± 2.3 µs (median ± stdev of 5 runs; min 38.0 µs)
  roofline efficiency: 1.2% (memory-bound; scored against gpu peaks, ran on cpu)
  achieved: 1.23 TFLOP/s, 41.2 GB/s of unfused traffic
  next: Memory-bound: the bytes are moved by classifier 100.0% (of 1 operation).
  next: Observed is 81.3× the bound: 39.5 µs above it, 39.5 µs per executed operation (1) — more than dispatch \
costs: profile the largest rows (classifier first) for slow kernels, layout changes or synchronisation.
  top 1 of 1 operations by share of bound:
  #  operation   kind         FLOPs    bytes  FLOP/B   share
  1  classifier  linear  49.2 MFLOP  1.65 MB   29.80  100.0%
"""

ABOVE_100 = """\
Neural cost gap analysis
  coverage: operations 100.0% · work 100.0% (of 1 operation: modeled 1, free 0)
  device: ran on Intel Xeon Platinum 8480C (cpu) · peaks for M3 Pro (kind unknown; user-supplied): float16 \
7.40 TFLOP/s; bandwidth 150 GB/s
  inputs: x (32, 768) · batch 32 (leading dim of x)
  timed runs: 3 after 3 warmup · sync: none needed
  work: 49.2 MFLOP (float16), intensity 29.80 FLOP/B of compiled traffic
  traffic: compulsory 1.65 MB · compiled = unfused (no compiled program read) · unfused 1.65 MB (read 1.59 MB, \
write 64.0 kB)
  bound: 11.0 µs, the sum of 1 operation's own bound (each its own kernel; program roofline 11.0 µs: compute 6.6 µs, \
memory 11.0 µs at main memory)
  traffic by level: main memory 1.65 MB (the spec names no cache levels: every kernel is scored at main-memory \
bandwidth)
  compulsory floor: 11.0 µs (1.65 MB of inputs, parameters and outputs moved once)
  observed: 5.0 µs ± 0 s (median ± stdev of 3 runs; min 5.0 µs)
  roofline efficiency: 219.9% (memory-bound) — above 100%: see findings
  achieved: 9.83 TFLOP/s, 330 GB/s of unfused traffic
  warning: Efficiency above 100%: observed 5.0 µs is faster than the bound 11.0 µs on M3 Pro (user-supplied). \
The bound is decided by classifier (100.0% of the bound, memory-bound, scored at main memory at 150 GB/s, footprint \
1.65 MB). What could be wrong: the peak or the FLOP count: observed is below the compute time alone (6.6 µs at the \
spec's peaks), which no placement of data or fusion changes; the bandwidth: observed is below the compulsory floor \
(11.0 µs: the program's inputs, parameters and outputs once at 150 GB/s); only data already in a cache, or a higher \
bandwidth than the spec's, explains it; the level: M3 Pro lists no cache levels, so every kernel is scored at main \
memory; classifier (footprint 1.65 MB) may be served from a cache (a spec from detect_hardware() lists them).
  next: Memory-bound: the bytes are moved by classifier 100.0% (of 1 operation).
  note: Only 3 timed runs: the median and spread are not reliable; use at least 5.
  top 1 of 1 operations by share of bound:
  #  operation   kind         FLOPs    bytes  FLOP/B   share
  1  classifier  linear  49.2 MFLOP  1.65 MB   29.80  100.0%
"""

H100 = HardwareSpec(
    "H100 SXM",
    67e12,
    3.35e12,
    kind="gpu",
    peak_flops_by_dtype={"float16": 989e12, "float32": 67e12},
    source="table: NVIDIA H100 datasheet",
)


def test_normal_report():
    assert analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO).render() == NORMAL


def test_low_coverage_warning():
    coverage = Coverage(
        total=10,
        modeled=1,
        free=2,
        unmodeled=(("sort", 4), ("threefry2x32", 3)),
        unit="equations",
        unmodeled_work=(("sort", 98_304, 393_216), ("threefry2x32", 6_000, 72_000)),
    )
    assert analyze_gap(seed_estimate(coverage), cpu_measurement(), M3_PRO).render() == LOW_COVERAGE


def test_device_mismatch():
    assert analyze_gap(seed_estimate(), cpu_measurement(), H100).render() == DEVICE_MISMATCH


def test_efficiency_above_100_percent():
    report = analyze_gap(seed_estimate(), cpu_measurement((5e-6, 5e-6, 5e-6)), M3_PRO)
    assert report.render() == ABOVE_100
