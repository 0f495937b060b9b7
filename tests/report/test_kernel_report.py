"""The kernel bound as users read it: the traffic, bound and level lines, the per-kernel table,
its JSON, and loading it back. Numbers derived by hand here:

Records (float32, 4 bytes an element):
  mm   (4×8 @ 8×16, scope block/attn, ×10): FLOPs 10·2·4·8·16 = 10,240; bytes 10·(4·(32 + 128) + 4·64) = 8,960
  proj (4×16 @ 16×8, scope block/mlp):      FLOPs 2·4·16·8 = 1,024;    bytes 4·(64 + 128) + 4·32 = 896
  out  (4×8 @ 8×2, no scope):               FLOPs 2·4·8·2 = 128;       bytes 4·(32 + 16) + 4·8 = 224
  total FLOPs 11,392 → "11.4 kFLOP"; unfused 8,960 + 896 + 224 = 10,080 B → "10.1 kB"
  (read 10·640 + 768 + 192 = 7,360 → "7.36 kB", write 10·256 + 128 + 32 = 2,720 → "2.72 kB")
Kernels: fusion.0 runs mm: 800 B × 10 executions = 8,000 B, footprint 800 B;
         copy.1 runs proj: 1,500 B × 2 executions = 3,000 B, footprint 1,500 B; out is unmapped (224 B).
  compiled 8,000 + 3,000 + 224 = 11,224 B → "11.2 kB", above unfused 10,080: the line names the kernels by
  traffic, fusion.0 8.00 kB then copy.1 3.00 kB. Intensity of compiled traffic 11,392 / 11,224 = 1.01 FLOP/B.
Chip: peak 1e12 FLOP/s; L1d 1,000 B at 100 GB/s, L2 2,000 B unmeasured, L3 10,000 B at 10 GB/s, DRAM at 1 GB/s.
  fusion.0: footprint 800 ≤ 1,000 → L1d: memory 8,000 / 100e9 = 80 ns, compute 10,240 / 1e12 = 10.24 ns → 80.0 ns
  copy.1: 1,500 > L1d, fits L2 (no bandwidth: skipped, the note says so) → L3: 3,000 / 10e9 = 300 ns,
          compute 1,024 / 1e12 = 1.024 ns → 300.0 ns
  unmapped: DRAM: 224 / 1e9 = 224 ns, compute 128 / 1e12 = 0.128 ns → 224.0 ns
  kernel bound 80 + 300 + 224 = 604 ns → "604.0 ns"; shares 300/604 = 49.7%, 224/604 = 37.1%, 80/604 = 13.2%
  program roofline: compute 11,392 / 1e12 = 11.4 ns, memory 11,224 / 1e9 = 11.2 µs → 11.2 µs
  unfused at DRAM 10,080 / 1e9 = 10.08 µs
  traffic by level, nearest first: L1d 8,000 → "8.00 kB" · L3 3,000 → "3.00 kB" · DRAM 224 B
Observed 2 µs: efficiency 604 / 2,000 = 30.2%.
"""

import json

import pytest

from neural_cost import (
    HardwareSpec,
    Kernel,
    MemoryLevel,
    NeuralCostError,
    Operation,
    SchemaError,
    analyze_gap,
    estimate_operations,
    load_report,
)
from neural_cost.report.diff import diff_reports
from neural_cost.report.load import read_report
from tests.helpers import M3_PRO, cpu_measurement, seed_estimate

OPS = (
    Operation("mm", "matmul", ((4, 8), (8, 16)), (4, 16), scope="block/attn", count=10),
    Operation("proj", "matmul", ((4, 16), (16, 8)), (4, 8), scope="block/mlp"),
    Operation("out", "matmul", ((4, 8), (8, 2)), (4, 2)),
)
KERNELS = (
    Kernel(
        "fusion.0", (0,), traffic_bytes=800, footprint_bytes=800, executions=10, scopes=("block/attn",), kind="fusion"
    ),
    Kernel(
        "copy.1",
        (1,),
        traffic_bytes=1_500,
        footprint_bytes=1_500,
        executions=2,
        scopes=("block/mlp", "block/mlp/proj", "head"),
        kind="copy",
    ),
)
CHIP = HardwareSpec(
    "Test chip",
    1e12,
    1e9,
    memory_levels=(
        MemoryLevel("L1d", 1_000, 100e9),
        MemoryLevel("L2", 2_000),
        MemoryLevel("L3", 10_000, 10e9),
        MemoryLevel("DRAM", 10**9),
    ),
)
RUN = (2e-6,) * 5


def kernel_report(kernels=KERNELS, hardware=CHIP):
    estimate = estimate_operations(OPS, kernels=kernels, kernel_source="test HLO")
    return analyze_gap(estimate, cpu_measurement(RUN), hardware)


def saved(report):
    return json.loads(json.dumps(report.to_dict()))


def write(tmp_path, data, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def problem(tmp_path, data):
    path = write(tmp_path, data)
    with pytest.raises(SchemaError) as caught:
        load_report(path)
    return str(caught.value).removeprefix(f"{path}: ")


def lines_of(text, start):
    return [line for line in text.splitlines() if line.startswith(start)]


def test_the_kernel_table_scores_each_kernel_at_its_level():
    report = kernel_report()
    assert report.bound_seconds == pytest.approx(604e-9, rel=1e-12)
    table = report.render(by="kernel").split("  top 3 of 3 kernels by share of bound (test HLO):\n")[1]
    assert table.splitlines() == [
        "  #  kernel              scopes                             runs       FLOPs  traffic  level     bound  share",
        "  1  copy.1              block/mlp, block/mlp/proj +1 more    ×2  1.02 kFLOP  3.00 kB  L3     300.0 ns  49.7%",
        "  2  (unmapped records)  -                                    ×1    128 FLOP    224 B  DRAM   224.0 ns  37.1%",
        "  3  fusion.0            block/attn                          ×10  10.2 kFLOP  8.00 kB  L1d     80.0 ns  13.2%",
    ]
    # --top limits the kernel table as it does the others
    assert "  top 1 of 3 kernels by share of bound (test HLO):" in report.render(top=1, by="kernel")


def test_the_traffic_bound_and_level_lines():
    text = kernel_report().render()
    assert lines_of(text, "  work:") == ["  work: 11.4 kFLOP (float32), intensity 1.01 FLOP/B of compiled traffic"]
    assert lines_of(text, "  traffic:") == [
        "  traffic: compulsory unknown · compiled 11.2 kB (2 kernels, test HLO; 1 record no kernel executes, at "
        "unfused traffic) · unfused 10.1 kB (read 7.36 kB, write 2.72 kB) — compiled is above unfused (copies, "
        "recomputation); most traffic: fusion.0 8.00 kB, copy.1 3.00 kB"
    ]
    assert lines_of(text, "  bound:") == [
        "  bound: 604.0 ns, the sum of 2 kernels' own bounds and that of 1 record no kernel executes (program "
        "roofline 11.2 µs: compute 11.4 ns, memory 11.2 µs at DRAM)"
    ]
    assert lines_of(text, "  traffic by level:") == ["  traffic by level: L1d 8.00 kB · L3 3.00 kB · DRAM 224 B"]
    # the scoring's note: copy.1 fits L2, which has no bandwidth, so it was scored at L3
    assert lines_of(text, "  note: L2 ") == [
        "  note: L2 has no measured bandwidth: 1 kernel(s) whose footprint fits there were scored at a farther "
        "level (`neural-cost hardware --calibrate` measures the caches)"
    ]
    assert "  roofline efficiency: 30.2% (memory-bound)" in text
    assert "of compiled traffic\n" in lines_of(text, "  achieved:")[0] + "\n"


def test_compiled_at_or_below_unfused_names_no_kernels():
    # fusion.0 alone, moving 800 B × 10 = 8,000 B for mm's unfused 8,960: compiled 8,000 + 896 + 224 = 9,120 B
    text = kernel_report(kernels=KERNELS[:1]).render()
    (line,) = lines_of(text, "  traffic:")
    assert line == (
        "  traffic: compulsory unknown · compiled 9.12 kB (1 kernel, test HLO; 2 records no kernel executes, at "
        "unfused traffic) · unfused 10.1 kB (read 7.36 kB, write 2.72 kB)"
    )


def test_without_levels_every_kernel_is_at_main_memory():
    # M3 Pro lists no levels: fusion.0 8,000 + copy.1 3,000 + out 224 = 11,224 B all at main memory
    text = kernel_report(hardware=M3_PRO).render()
    assert lines_of(text, "  traffic by level:") == [
        "  traffic by level: main memory 11.2 kB (the spec names no cache levels: every kernel is scored at "
        "main-memory bandwidth)"
    ]


def test_by_chooses_the_table_and_group_by_scope_is_by_scope():
    report = kernel_report()
    assert report.render(group_by_scope=True) == report.render(by="scope")
    assert report.render(group_by_scope=True, by="scope") == report.render(by="scope")
    assert report.render() == report.render(by="operation")
    assert "top 3 of 3 operations" in report.render() and "top 3 of 3 scopes" in report.render(by="scope")
    with pytest.raises(NeuralCostError, match=r"group_by_scope=True and by='kernel' ask for two different tables"):
        report.render(group_by_scope=True, by="kernel")
    with pytest.raises(NeuralCostError, match=r"by='kernels' is not a table; use one of 'operation', 'scope'"):
        report.render(by="kernels")
    assert "kernel  " not in report.render(top=0, by="kernel")  # --top 0: no table


def test_a_report_without_kernels_scores_each_operation_as_its_own_kernel():
    # The seed's one record: its own kernel, max(6.64 µs, 10.99 µs) = 11.0 µs at main memory.
    text = analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO).render(by="kernel")
    assert text.endswith(
        "  top 1 of 1 kernel by share of bound (no compiled program read: each operation scored as its own kernel):\n"
        "  #  kernel      scopes  runs       FLOPs  traffic  level          bound   share\n"
        "  1  classifier  -         ×1  49.2 MFLOP  1.65 MB  main memory  11.0 µs  100.0%\n"
    )


def test_the_json_carries_the_kernel_bound():
    data = saved(kernel_report())
    analysis = data["analysis"]
    assert analysis["bound_seconds"] == pytest.approx(604e-9, rel=1e-12)
    assert analysis["roofline_seconds"] == analysis["memory_seconds"] == pytest.approx(11_224 / 1e9, rel=1e-12)
    assert analysis["unfused_memory_seconds"] == pytest.approx(10_080 / 1e9, rel=1e-12)
    assert analysis["compiled_bytes"] == data["estimate"]["compiled_bytes"] == 11_224
    assert list(analysis["traffic_by_level"].items()) == [("L1d", 8_000), ("L3", 3_000), ("DRAM", 224)]
    assert len(analysis["kernel_notes"]) == 1 and analysis["bound_side"] == "memory"
    assert [(r["name"], r["level"], r["traffic_bytes"]) for r in data["kernel_rows"]] == [
        ("copy.1", "L3", 3_000),
        ("(unmapped records)", "DRAM", 224),
        ("fusion.0", "L1d", 8_000),
    ]
    assert data["estimate"]["kernel_source"] == "test HLO"
    assert [k["flops_by_dtype"] for k in data["estimate"]["kernels"]] == [{"float32": 10_240}, {"float32": 1_024}]


def test_kernels_round_trip_through_json(tmp_path):
    report = kernel_report()
    loaded = load_report(write(tmp_path, saved(report)))
    assert loaded.bound_seconds == report.bound_seconds  # exactly: the same records, the same arithmetic
    assert loaded.kernel_rows == report.kernel_rows and loaded.kernel_notes == report.kernel_notes
    assert loaded.estimate.kernels == report.estimate.kernels and loaded.hardware == report.hardware
    assert loaded.render(by="kernel") == report.render(by="kernel")
    assert saved(loaded) | {"provenance": None} == saved(report) | {"provenance": None}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["estimate"]["kernels"][1].update(operations=[3]),
            "estimate.kernels[1].operations[0]: 3 is not an operation: estimate.by_operation has 3 rows",
        ),
        (
            lambda d: d["estimate"]["kernels"][1].update(operations=[0]),
            "estimate.kernels[1].operations[0]: operation 0 is executed by estimate.kernels[0] already; a record "
            "belongs to one kernel at most",
        ),
        (
            lambda d: d["estimate"]["kernels"][0].update(operations=[0, 0]),
            "estimate.kernels[0].operations[1]: operation 0 is executed by estimate.kernels[0] already; a record "
            "belongs to one kernel at most",
        ),
        (
            lambda d: d["estimate"]["kernels"][0]["flops_by_dtype"].update(float32=10_241),
            "estimate.kernels[0].flops_by_dtype.float32: 10241 is not the sum over its operations' flops_by_dtype "
            "(10240)",
        ),
        (
            lambda d: d["estimate"]["kernels"][0]["flops_by_dtype"].update(bfloat16=5),
            "estimate.kernels[0].flops_by_dtype.bfloat16: 5 is not the sum over its operations' flops_by_dtype "
            "(they have no bfloat16 FLOPs)",
        ),
        (
            lambda d: d["estimate"].update(compiled_bytes=11_225),
            "estimate.compiled_bytes: 11225 is not every kernel's traffic over its executions, plus the unfused "
            "bytes of the records no kernel executes (11224)",
        ),
        (
            lambda d: d["estimate"]["kernels"][0].update(traffic_bytes=801),  # 801·10 + 3,000 + 224 = 11,234
            "estimate.compiled_bytes: 11224 is not every kernel's traffic over its executions, plus the unfused "
            "bytes of the records no kernel executes (11234)",
        ),
        (
            lambda d: d["estimate"]["kernels"][0].update(executions=-1),
            "estimate.kernels[0].executions: -1 must be a non-negative integer",
        ),
        (
            lambda d: d["estimate"]["kernels"][0].update(operations="0"),
            'estimate.kernels[0].operations: "0" must be an array',
        ),
        (lambda d: d["estimate"]["kernels"][0].pop("traffic_bytes"), "estimate.kernels[0].traffic_bytes: missing"),
        (
            lambda d: d["kernel_rows"][0].update(traffic_bytes=3_001),
            "kernel_rows[*].traffic_bytes: 11225 is not the compiled bytes (11224)",
        ),
        (
            lambda d: d["analysis"]["traffic_by_level"].update(L1d=1),
            "analysis.traffic_by_level: 3225 is not the compiled bytes, in sum (11224)",
        ),
        (
            lambda d: d["kernel_rows"][0].update(name="fusion.9"),  # a row no kernel of the estimate makes
            'kernel_rows[0].name: "fusion.9" is not a row the estimate\'s kernels make',
        ),
        (
            lambda d: d["kernel_rows"].pop(),  # fusion.0's row (the last, 80 ns) gone
            'kernel_rows: has no row for "fusion.0", which the estimate\'s kernels make',
        ),
        (
            lambda d: d["hardware"]["memory_levels"][0].update(capacity_bytes=0),
            "hardware.memory_levels[0].capacity_bytes: 0 must be a positive integer",
        ),
    ],
)
def test_a_kernel_that_does_not_add_up_is_refused_naming_the_path(tmp_path, edit, message):
    data = saved(kernel_report())
    edit(data)
    assert problem(tmp_path, data) == message


def test_a_tiny_cache_bandwidth_is_not_used_and_is_named(tmp_path):
    # L1d at 1e-320 B/s, below main memory's 1 GB/s, is no cache's figure (it made fusion.0's 8,000 B
    # an infinite time): the saved report loads, fusion.0 is scored at the nearest usable level that
    # holds it (L3, 10,000 B at 10 GB/s), and a note names the level and both figures.
    data = saved(kernel_report())
    data["hardware"]["memory_levels"][0]["bandwidth"] = 1e-320
    loaded = load_report(write(tmp_path, data))
    assert next(row for row in loaded.kernel_rows if row.name == "fusion.0").level == "L3"
    said = "L1d's measured bandwidth (0.00 B/s) is below main memory's (1.00 GB/s): no cache's figure"
    assert any(note.startswith(said) for note in loaded.kernel_notes), loaded.kernel_notes


def test_version_1_and_pre_kernel_version_2_reports_still_load(tmp_path):
    # What a writer before kernels wrote: no kernels, compiled_bytes, kernel_rows or new analysis fields.
    data = saved(analyze_gap(seed_estimate(), cpu_measurement(), M3_PRO))
    for key in ("kernels", "kernel_source", "compiled_bytes"):
        del data["estimate"][key]
    for key in ("roofline_seconds", "unfused_memory_seconds", "compiled_bytes", "traffic_by_level", "kernel_notes"):
        del data["analysis"][key]
    del data["kernel_rows"]
    loaded = load_report(write(tmp_path, data))
    # the one record scored as its own kernel: the old bound, max(6.64 µs, 10.99 µs) = 1,649,152 / 150e9
    assert loaded.bound_seconds == 1_649_152 / 150e9 and [r.name for r in loaded.kernel_rows] == ["classifier"]
    version_1 = data | {"schema_version": 1}
    for key in ("unmodeled_work", "unmodeled_flops", "unmodeled_bytes"):
        del version_1["estimate"]["coverage"][key]
    del version_1["estimate"]["work_fraction"]
    report, version = read_report(write(tmp_path, version_1, "v1.json"))
    assert version == 1 and report.bound_seconds == loaded.bound_seconds
    # kernels in a file that says version 1 are an edit, not a version-1 writer's output
    kernels = saved(kernel_report()) | {"schema_version": 1}
    del kernels["estimate"]["coverage"]["unmodeled_work"]
    assert problem(tmp_path, kernels) == "estimate.kernels: is a version-2 field in a version-1 report"


def test_diff_shows_each_kernels_bound_and_a_change_of_method():
    before = kernel_report()
    # copy.1 gone (proj now unmapped, 896 B at DRAM = 896 ns); fusion.0 unchanged at 80.0 ns
    after = kernel_report(kernels=KERNELS[:1])
    text = diff_reports(before, after)
    assert "  per kernel (top 3 by bound):\n" in text
    assert "    (unmapped records)     224.0 ns →      1.1 µs   +896.0 ns (+400.0%)\n" in text  # 224 + 896 ns
    assert "    copy.1                 300.0 ns →           - (gone)\n" in text
    assert "    fusion.0                80.0 ns →     80.0 ns   =\n" in text
    # compiled 11,224 → 9,120 B: -2,104 B, -18.7%; bound 604 ns → 80 + 1,120 = 1,200 ns: +596 ns, +98.7%
    assert "  bytes (compiled)            11.2 kB →      9.12 kB   -2.10 kB (-18.7%)\n" in text
    assert "  bound                      604.0 ns →       1.2 µs   +596.0 ns (+98.7%)\n" in text
    plain = analyze_gap(estimate_operations(OPS), cpu_measurement(RUN), CHIP)
    text = diff_reports(plain, before, versions=(1, 2))
    assert "  NOTE: schema version 1 → 2: version 1 recorded no unmodeled sizes" in text
    assert (
        "  NOTE: kernels: no compiled program read (each operation scored as its own kernel, at its unfused "
        "traffic) → 2 kernels (test HLO); the bound delta includes the change of method\n"
    ) in text
    assert "per kernel" not in text  # only one of the two has kernels
