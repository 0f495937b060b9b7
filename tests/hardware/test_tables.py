"""Chip tables: every row against the figures on its cited datasheet, name matching, validation.

The expected figures below are copied from the datasheets the rows cite, written the way the
datasheet writes them. NVIDIA prints "dense | sparse*" pairs on some datasheets and only the
starred sparse figure on others (L4, H100, H200, B200); there the dense rate is written here as
``sparse / 2``. TFLOPS are decimal (1e12), bandwidth GB/s (1e9 B/s), capacity GB (1e9 B).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from neural_cost.core.errors import HardwareError
from neural_cost.hardware.tables import (
    AppleCpuRow,
    AppleGpuRow,
    ChipTables,
    GpuRow,
    apple_cpu_row,
    apple_gpu_spec,
    gpu_spec,
    load_tables,
    match_apple_gpu,
    match_gpu,
    table_rows,
)

F64, F32, TF32, BF16, F16, FP8, I8 = "float64", "float32", "tfloat32", "bfloat16", "float16", "float8_e4m3fn", "int8"

# A100 datasheet: FP64 9.7 and FP64 Tensor Core 19.5 (the tensor rate is stored: DGEMM runs on it),
# FP32 19.5, TF32 156 | 312*, BF16 312 | 624*, FP16 312 | 624*, INT8 624 | 1,248*
A100 = {F64: 19.5, F32: 19.5, TF32: 156, BF16: 312, F16: 312, I8: 624}
# H100 datasheet, SXM: FP64 34, FP64 Tensor Core 67, FP32 67, TF32 989*, BF16 1,979*, FP16 1,979*,
# FP8 3,958*, INT8 3,958* (* = with sparsity). The H200 SXM column repeats these figures.
H100_SXM = {F64: 67, F32: 67, TF32: 989 / 2, BF16: 1979 / 2, F16: 1979 / 2, FP8: 3958 / 2, I8: 3958 / 2}
# H100 NVL and H200 NVL columns: FP64 30, FP64 Tensor Core 60, FP32 60, TF32 835*, BF16 1,671*,
# FP16 1,671*, FP8 3,341*, INT8 3,341*
NVL = {F64: 60, F32: 60, TF32: 835 / 2, BF16: 1671 / 2, F16: 1671 / 2, FP8: 3341 / 2, I8: 3341 / 2}

# key: (dense TFLOPS by dtype, bandwidth GB/s, capacity GB). The dtype set must match exactly:
# a dtype the datasheet does not list is not in the row.
DATASHEET: dict[str, tuple[dict[str, float], float, float]] = {
    # V100 datasheet, SXM2: double 7.8, single 15.7, Tensor 125 (Volta has no sparsity); 900 GB/s
    "v100-sxm2-16gb": ({F64: 7.8, F32: 15.7, F16: 125}, 900, 16),
    "v100-sxm2-32gb": ({F64: 7.8, F32: 15.7, F16: 125}, 900, 32),
    # V100 datasheet, PCIe: double 7, single 14, Tensor 112; 900 GB/s
    "v100-pcie-16gb": ({F64: 7, F32: 14, F16: 112}, 900, 16),
    "v100-pcie-32gb": ({F64: 7, F32: 14, F16: 112}, 900, 32),
    # T4 datasheet: FP32 8.1, mixed precision (FP16/FP32) 65, INT8 130 TOPS (no sparsity); "320+ GB/s"; 16 GB
    "t4": ({F32: 8.1, F16: 65, I8: 130}, 320, 16),
    # A10 datasheet: FP32 31.2, TF32 62.5 | 125*, BF16 125 | 250*, FP16 125 | 250*, INT8 250 | 500*; 600 GB/s; 24 GB
    "a10": ({F32: 31.2, TF32: 62.5, BF16: 125, F16: 125, I8: 250}, 600, 24),
    # A100 datasheet: 40GB PCIe 1,555 GB/s; 80GB PCIe 1,935 GB/s; 40GB SXM 1,555 GB/s; 80GB SXM 2,039 GB/s
    "a100-pcie-40gb": (A100, 1555, 40),
    "a100-pcie-80gb": (A100, 1935, 80),
    "a100-sxm4-40gb": (A100, 1555, 40),
    "a100-sxm4-80gb": (A100, 2039, 80),
    # L4 datasheet (sparse only): FP32 30.3, TF32 120*, BF16 242*, FP16 242*, FP8 485*, INT8 485*; 300 GB/s; 24 GB
    "l4": ({F32: 30.3, TF32: 120 / 2, BF16: 242 / 2, F16: 242 / 2, FP8: 485 / 2, I8: 485 / 2}, 300, 24),
    # L40S datasheet: FP32 91.6, TF32 183 | 366*, BF16 362.05 | 733*, FP16 362.05 | 733*, FP8 733 | 1,466*,
    # INT8 733 | 1,466*; 864 GB/s; 48 GB
    "l40s": ({F32: 91.6, TF32: 183, BF16: 362.05, F16: 362.05, FP8: 733, I8: 733}, 864, 48),
    # H100 datasheet, PCIe: FP64 26, FP64 Tensor Core 51, FP32 51, TF32 756*, BF16 1,513*, FP16 1,513*,
    # FP8 3,026*, INT8 3,026*; 2 TB/s; 80 GB
    "h100-pcie": (
        {F64: 51, F32: 51, TF32: 756 / 2, BF16: 1513 / 2, F16: 1513 / 2, FP8: 3026 / 2, I8: 3026 / 2},
        2000,
        80,
    ),
    # H100 datasheet, SXM: 3.35 TB/s, 80 GB
    "h100-sxm": (H100_SXM, 3350, 80),
    # H100 datasheet, NVL (per GPU): 3.9 TB/s, 94 GB
    "h100-nvl": (NVL, 3900, 94),
    # H200 datasheet, SXM and NVL: 141 GB HBM3e at 4.8 TB/s
    "h200-sxm": (H100_SXM, 4800, 141),
    "h200-nvl": (NVL, 4800, 141),
    # HGX B200 (per GPU): FP64 37, FP32 75, TF32 2.2 PF*, FP16/BF16 4.5 PF*, FP8 9 PF*, INT8 9 POPS*;
    # DGX B200 datasheet: 1,440 GB and 64 TB/s over 8 GPUs = 180 GB and 8 TB/s each
    "b200": ({F64: 37, F32: 75, TF32: 2200 / 2, BF16: 4500 / 2, F16: 4500 / 2, FP8: 9000 / 2, I8: 9000 / 2}, 8000, 180),
    # GA102 whitepaper, RTX 3090: FP32 35.6; FP16 Tensor with FP32 accumulate 71 | 142* (with FP16 accumulate
    # 142 | 284*); BF16 71 | 142*; TF32 35.6 | 71*; INT8 284 | 568*; 936 GB/s; 24 GB
    "rtx-3090": ({F32: 35.6, TF32: 35.6, BF16: 71, F16: 71, I8: 284}, 936, 24),
    # Ada whitepaper, RTX 4090: FP32 82.6; FP16 Tensor with FP32 accumulate 165.2 | 330.4* (with FP16
    # accumulate 330.3 | 660.6*); BF16 165.2 | 330.4*; TF32 82.6 | 165.2*; FP8 with FP32 accumulate
    # 330.3 | 660.6* (with FP16 accumulate 660.6 | 1,321.2*); INT8 660.6 | 1,321.2*; 1,008 GB/s; 24 GB
    "rtx-4090": ({F32: 82.6, TF32: 82.6, BF16: 165.2, F16: 165.2, FP8: 330.3, I8: 660.6}, 1008, 24),
}

# The datasheets' BF16 tensor figures, (dense, sparse*). Where a datasheet prints only the sparse
# figure, the dense one is half of it. A stored BF16 peak must be the dense one.
BF16_DENSE_SPARSE: dict[str, tuple[float, float]] = {
    "a10": (125, 250),
    "a100-pcie-40gb": (312, 624),
    "a100-pcie-80gb": (312, 624),
    "a100-sxm4-40gb": (312, 624),
    "a100-sxm4-80gb": (312, 624),
    "l4": (121, 242),
    "l40s": (362.05, 733),  # the datasheet's pair is not exactly 1:2 (362.05 x 2 = 724.1)
    "h100-pcie": (756.5, 1513),
    "h100-sxm": (989.5, 1979),
    "h100-nvl": (835.5, 1671),
    "h200-sxm": (989.5, 1979),
    "h200-nvl": (835.5, 1671),
    "b200": (2250, 4500),
    "rtx-3090": (71, 142),
    "rtx-4090": (165.2, 330.4),
}

# Names exactly as nvidia-smi --query-gpu=name / NVML nvmlDeviceGetName print them.
NVML_NAMES = {
    "Tesla V100-SXM2-16GB": "v100-sxm2-16gb",
    "Tesla V100-SXM2-32GB": "v100-sxm2-32gb",
    "Tesla V100-PCIE-16GB": "v100-pcie-16gb",
    "Tesla V100-PCIE-32GB": "v100-pcie-32gb",
    "Tesla T4": "t4",
    "NVIDIA A10": "a10",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-sxm4-40gb",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA L4": "l4",
    "NVIDIA L40S": "l40s",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA B200": "b200",
    "NVIDIA GeForce RTX 3090": "rtx-3090",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
}

# Real names of other parts, which contain a table pattern's letters but are not that part.
NOT_IN_TABLE = [
    "NVIDIA A10G",  # AWS's A10 variant: a different card
    "NVIDIA A100-SXM4-40GB MIG 1g.5gb",  # a MIG slice has 1/7 of the SMs
    "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
    "NVIDIA GeForce RTX 4090 D",  # fewer SMs than the RTX 4090
    "NVIDIA GeForce RTX 4090 Laptop GPU",
    "NVIDIA GeForce RTX 3090 Ti",
    "NVIDIA GH200 480GB",  # "GH200" is not the word "H200"
    "NVIDIA GB200",
    "NVIDIA L40",
    "Tesla V100S-PCIE-32GB",
    "NVIDIA",
    "",
]


@pytest.fixture(scope="module")
def gpus() -> dict[str, GpuRow]:
    return {row.key: row for row in load_tables().gpus}


def write_table(tmp_path: Path, text: str) -> ChipTables:
    path = tmp_path / "chips.toml"
    path.write_text(text)
    return load_tables(path)


def gpu_row(key: str, patterns: str, peaks: str = "fp32 = 10.0", extra: str = "") -> str:
    return (
        f'[[gpu]]\nkey = "{key}"\nname = "Test {key}"\npatterns = [{patterns}]\npeak_tflops = {{ {peaks} }}\n'
        f'memory_bandwidth_gb_s = 1000\nmemory_capacity_gb = 16\nsource = "a test"\n{extra}\n'
    )


# ------------------------------------------------------------------------------------ NVIDIA rows


def test_every_gpu_row_has_a_datasheet_check(gpus: dict[str, GpuRow]) -> None:
    assert set(gpus) == set(DATASHEET)


@pytest.mark.parametrize("key", sorted(DATASHEET))
def test_gpu_row_matches_its_datasheet(gpus: dict[str, GpuRow], key: str) -> None:
    tflops, bandwidth_gb_s, capacity_gb = DATASHEET[key]
    row = gpus[key]
    assert dict(row.peak_flops) == pytest.approx({dtype: value * 1e12 for dtype, value in tflops.items()}, rel=1e-12)
    assert row.memory_bandwidth == pytest.approx(bandwidth_gb_s * 1e9, rel=1e-12)
    assert row.memory_capacity == round(capacity_gb * 1e9)  # decimal GB, as the datasheet states it
    assert row.source.startswith("NVIDIA ") and "https://" in row.source


def test_bf16_peaks_are_dense_not_sparse(gpus: dict[str, GpuRow]) -> None:
    with_bf16 = {key for key, row in gpus.items() if BF16 in row.peak_flops and F32 in row.peak_flops}
    assert with_bf16 == set(BF16_DENSE_SPARSE)  # a new row with a BF16 peak needs its datasheet pair here
    for key, (dense, sparse) in BF16_DENSE_SPARSE.items():
        stored = gpus[key].peak_flops[BF16]
        assert stored == pytest.approx(dense * 1e12, rel=1e-12), key
        assert stored != pytest.approx(sparse * 1e12, rel=1e-3), key
        assert dense == pytest.approx(sparse / 2, rel=0.02), key  # the dense rate is half the sparse one


def test_consumer_cards_store_the_fp32_accumulate_rate(gpus: dict[str, GpuRow]) -> None:
    # RTX 4090: FP16 tensor with FP16 accumulate 330.3, with FP32 accumulate 165.2 (half); frameworks
    # accumulate in FP32, so the FP32-accumulate rate is the one stored.
    assert gpus["rtx-4090"].peak_flops[F16] == pytest.approx(330.3e12 / 2, rel=1e-3)
    # RTX 3090: 142 with FP16 accumulate, 71 with FP32 accumulate
    assert gpus["rtx-3090"].peak_flops[F16] == pytest.approx(142e12 / 2)


def test_gpu_spec_uses_canonical_dtypes_and_fp32_as_the_fallback(gpus: dict[str, GpuRow]) -> None:
    spec = gpu_spec(gpus["h100-sxm"])
    assert spec.kind == "gpu"
    assert spec.name == "NVIDIA H100 SXM 80GB"
    assert spec.peak_flops == 67e12  # FP32 67 TFLOPS
    assert set(spec.peak_flops_by_dtype or {}) == {F64, F32, TF32, BF16, F16, FP8, I8}
    assert spec.peak("bfloat16") == 989.5e12  # 1,979* / 2
    assert spec.peak("float8_e4m3fn") == 1979e12  # 3,958* / 2
    assert spec.memory_bandwidth == 3.35e12
    assert spec.memory_capacity == 80_000_000_000
    assert spec.source.startswith("table: NVIDIA H100 Tensor Core GPU datasheet")
    assert spec.ridge_point("bfloat16") == pytest.approx(989.5e12 / 3.35e12)  # 295.4 FLOP/byte


def test_a_dtype_missing_from_the_datasheet_has_no_peak_of_its_own(gpus: dict[str, GpuRow]) -> None:
    spec = gpu_spec(gpus["rtx-4090"])  # FP64 is not in the Ada whitepaper's table
    assert not spec.has_peak("float64")
    assert spec.peak("float64") == spec.peak_flops  # falls back to FP32, and the report says so


# ------------------------------------------------------------------------------------ name matching


@pytest.mark.parametrize(("name", "key"), sorted(NVML_NAMES.items()))
def test_nvml_names_match_their_row(name: str, key: str) -> None:
    row = match_gpu(name)
    assert row is not None and row.key == key


@pytest.mark.parametrize("name", NOT_IN_TABLE)
def test_other_parts_match_no_row(name: str) -> None:
    assert match_gpu(name) is None


@pytest.mark.parametrize(
    ("spelling", "key"),
    [
        ("nvidia a100-sxm4-80gb", "a100-sxm4-80gb"),  # case
        ("A100 SXM4 80GB", "a100-sxm4-80gb"),  # spaces for dashes, no brand
        ("NVIDIA_A100_SXM4_80GB", "a100-sxm4-80gb"),  # underscores
        ("Tesla V100 SXM2 32GB", "v100-sxm2-32gb"),
        ("T4", "t4"),
        ("GeForce RTX 4090", "rtx-4090"),
        ("H100 SXM", "h100-sxm"),
        ("H200 NVL", "h200-nvl"),
    ],
)
def test_matching_ignores_case_brand_and_separators(spelling: str, key: str) -> None:
    row = match_gpu(spelling)
    assert row is not None and row.key == key


def test_every_pattern_finds_its_own_row() -> None:
    # No row swallows another: each row's own spellings lead back to it, never to a neighbour
    # (H100 PCIe / SXM / NVL, H200 SXM / NVL, A100 PCIe / SXM4 at 40 and 80 GB).
    for row in load_tables().gpus:
        for pattern in row.patterns:
            found = match_gpu(pattern)
            assert found is not None and found.key == row.key, (pattern, found)


def test_the_most_specific_row_wins_even_when_a_generic_row_comes_first(tmp_path: Path) -> None:
    tables = write_table(
        tmp_path,
        gpu_row("a100-generic", '"A100"')
        + gpu_row("a100-sxm4-80gb", '"NVIDIA A100-SXM4-80GB"', "fp32 = 19.5")
        + gpu_row("h200", '"NVIDIA H200"')
        + gpu_row("h200-nvl", '"NVIDIA H200 NVL"'),
    )
    sxm = match_gpu("NVIDIA A100-SXM4-80GB", tables)
    assert sxm is not None and sxm.key == "a100-sxm4-80gb"  # "a100 sxm4 80gb" (14 chars) beats "a100" (4)
    generic = match_gpu("NVIDIA A100-PCIE-40GB", tables)
    assert generic is not None and generic.key == "a100-generic"  # only the generic pattern is in it
    nvl = match_gpu("NVIDIA H200 NVL", tables)
    assert nvl is not None and nvl.key == "h200-nvl"
    sxm_h200 = match_gpu("NVIDIA H200", tables)
    assert sxm_h200 is not None and sxm_h200.key == "h200"


def test_an_equally_specific_match_in_two_rows_is_an_error(tmp_path: Path) -> None:
    tables = write_table(tmp_path, gpu_row("left", '"A100 SXM4"') + gpu_row("right", '"SXM4 80GB"'))
    with pytest.raises(HardwareError, match="'left' and 'right' equally"):
        match_gpu("NVIDIA A100-SXM4-80GB", tables)


def test_excludes_keep_a_variant_off_a_row(tmp_path: Path) -> None:
    tables = write_table(tmp_path, gpu_row("rtx-4090", '"RTX 4090"', extra='excludes = ["RTX 4090 D"]'))
    assert match_gpu("NVIDIA GeForce RTX 4090 D", tables) is None
    assert match_gpu("NVIDIA GeForce RTX 4090", tables) is not None


# ------------------------------------------------------------------------------------ Apple GPUs

# (chip, GPU cores): (bandwidth GB/s as Apple states it, GPU clock MHz or None where not confirmed).
# M1: Apple states no bandwidth; LPDDR4X-4266 x 128 bit = 68.25 GB/s. Clocks: Turner, metal-benchmarks.
APPLE_GPUS: dict[tuple[str, int], tuple[float, float | None]] = {
    ("M1", 7): (68.25, 1278),
    ("M1", 8): (68.25, 1278),
    ("M1 Pro", 14): (200, 1296),
    ("M1 Pro", 16): (200, 1296),
    ("M1 Max", 24): (400, 1296),
    ("M1 Max", 32): (400, 1296),
    ("M1 Ultra", 48): (800, 1296),
    ("M1 Ultra", 64): (800, 1296),
    ("M2", 8): (100, 1398),
    ("M2", 10): (100, 1398),
    ("M2 Pro", 16): (200, None),
    ("M2 Pro", 19): (200, None),
    ("M2 Max", 30): (400, None),
    ("M2 Max", 38): (400, None),
    ("M2 Ultra", 60): (800, None),
    ("M2 Ultra", 76): (800, None),
    ("M3", 8): (100, None),
    ("M3", 10): (100, None),
    ("M3 Pro", 14): (150, None),
    ("M3 Pro", 18): (150, None),
    ("M3 Max", 30): (300, None),  # binned: 384-bit bus
    ("M3 Max", 40): (400, None),
    ("M3 Ultra", 60): (819, None),
    ("M3 Ultra", 80): (819, None),
    ("M4", 8): (120, None),
    ("M4", 10): (120, None),
    ("M4 Pro", 16): (273, None),
    ("M4 Pro", 20): (273, None),
    ("M4 Max", 32): (410, None),  # binned
    ("M4 Max", 40): (546, None),
}


def test_apple_gpu_rows_match_apples_figures() -> None:
    rows = {(row.chip, row.gpu_cores): row for row in load_tables().apple_gpus}
    assert set(rows) == set(APPLE_GPUS)
    for variant, (bandwidth_gb_s, clock_mhz) in APPLE_GPUS.items():
        row = rows[variant]
        assert row.memory_bandwidth == pytest.approx(bandwidth_gb_s * 1e9), variant
        assert row.gpu_clock_hz == (None if clock_mhz is None else pytest.approx(clock_mhz * 1e6)), variant
        assert "https://" in row.source, variant


def test_binned_m3_max_is_told_apart_by_gpu_cores() -> None:
    binned = match_apple_gpu("Apple M3 Max", 30)
    full = match_apple_gpu("Apple M3 Max", 40)
    assert isinstance(binned, AppleGpuRow) and isinstance(full, AppleGpuRow)
    assert binned.memory_bandwidth == 300e9  # 30-core GPU: 300 GB/s
    assert full.memory_bandwidth == 400e9  # 40-core GPU: 400 GB/s
    same = match_apple_gpu("M3 Max", 30)
    assert same is not None and same.key == binned.key  # with or without "Apple"


def test_apple_gpu_without_core_count_is_ambiguous_when_variants_differ() -> None:
    with pytest.raises(HardwareError, match=r"30 or 40 GPU cores.*pass gpu_cores"):
        match_apple_gpu("Apple M3 Max", None)
    assert match_apple_gpu("Apple M3 Max", 36) is None  # no such variant
    assert match_apple_gpu("Apple M9", 10) is None


def test_apple_gpu_fp32_is_cores_x_128_alus_x_2_x_clock() -> None:
    m1 = match_apple_gpu("Apple M1", 8)
    assert m1 is not None
    assert m1.fp32_flops == pytest.approx(8 * 128 * 2 * 1.278e9)  # 2.617344 TFLOPS
    assert m1.fp32_flops == pytest.approx(2.6e12, rel=0.01)  # Apple: "2.6 teraflops"
    pro = match_apple_gpu("Apple M1 Pro", 16)
    big = match_apple_gpu("Apple M1 Max", 32)
    assert pro is not None and big is not None
    assert pro.fp32_flops == pytest.approx(5.2e12, rel=0.025)  # Apple: 5.2; formula 5.308
    assert big.fp32_flops == pytest.approx(10.4e12, rel=0.025)  # Apple: 10.4; formula 10.617
    m2 = match_apple_gpu("Apple M2", 10)
    assert m2 is not None and m2.fp32_flops == pytest.approx(10 * 128 * 2 * 1.398e9)  # 3.579 TFLOPS


def test_apple_gpu_spec() -> None:
    row = match_apple_gpu("Apple M1", 8)
    assert row is not None
    spec = apple_gpu_spec(row)
    assert spec.kind == "gpu"
    assert spec.name == "Apple M1 (8-core GPU)"
    assert spec.peak_flops == pytest.approx(2.617344e12)
    assert dict(spec.peak_flops_by_dtype or {}) == {"float32": spec.peak_flops}
    assert spec.memory_bandwidth == 68.25e9
    assert spec.source.startswith("table: ") and "128 ALUs x 2 x 1278 MHz" in spec.source


def test_apple_gpu_spec_refuses_a_row_without_a_confirmed_peak() -> None:
    row = match_apple_gpu("Apple M3 Max", 30)
    assert row is not None and row.fp32_flops is None
    with pytest.raises(HardwareError, match=r"no FP32 peak for the Apple M3 Max \(30-core GPU\).*calibrate"):
        apple_gpu_spec(row)


# ------------------------------------------------------------------------------------ Apple CPUs

# (chip, P cores, E cores): (P GHz, E GHz), or None where the clocks are not confirmed.
APPLE_CPUS: dict[tuple[str, int, int], tuple[float, float] | None] = {
    ("M1", 4, 4): (3.2, 2.064),
    ("M1 Pro", 8, 2): (3.228, 2.064),
    ("M1 Pro", 6, 2): (3.228, 2.064),
    ("M1 Max", 8, 2): (3.228, 2.064),
    ("M1 Ultra", 16, 4): (3.228, 2.064),
    ("M2", 4, 4): (3.504, 2.424),
    ("M2 Pro", 8, 4): None,
    ("M2 Pro", 6, 4): None,
    ("M2 Max", 8, 4): None,
    ("M2 Ultra", 16, 8): None,
    ("M3", 4, 4): (4.056, 2.748),
    ("M3 Pro", 6, 6): None,
    ("M3 Pro", 5, 6): None,
    ("M3 Max", 12, 4): None,
    ("M3 Max", 10, 4): None,
    ("M3 Ultra", 24, 8): None,
    ("M3 Ultra", 20, 8): None,
    ("M4", 4, 6): None,
    ("M4", 4, 4): None,
    ("M4", 3, 6): None,
    ("M4 Pro", 10, 4): (4.5, 2.6),
    ("M4 Pro", 8, 4): (4.5, 2.6),
    ("M4 Max", 12, 4): None,
    ("M4 Max", 10, 4): None,
}


def test_apple_cpu_rows_match_their_sources() -> None:
    rows = {(row.chip, row.p_cores, row.e_cores): row for row in load_tables().apple_cpus}
    assert set(rows) == set(APPLE_CPUS)
    for variant, clocks in APPLE_CPUS.items():
        row = rows[variant]
        assert (row.p_flops_per_cycle, row.e_flops_per_cycle) == (32, 16), variant  # NEON: 4 x 128-bit FMA / 2
        if clocks is None:
            assert row.peak_fp32_flops is None, variant
        else:
            assert (row.p_clock_hz, row.e_clock_hz) == pytest.approx((clocks[0] * 1e9, clocks[1] * 1e9)), variant
        assert "https://" in row.source, variant


def test_m1_cpu_peak_formula() -> None:
    row = apple_cpu_row("Apple M1", 4, 4)
    assert isinstance(row, AppleCpuRow)
    # 4 x 3.2e9 x 32 + 4 x 2.064e9 x 16 = 409.6e9 + 132.096e9 = 541.696 GFLOP/s
    assert row.peak_fp32_flops == pytest.approx(541.696e9, rel=1e-12)


def test_other_cpu_peaks() -> None:
    m3 = apple_cpu_row("M3", 4, 4)
    m4_pro = apple_cpu_row("Apple M4 Pro", 10, 4)
    assert m3 is not None and m4_pro is not None
    assert m3.peak_fp32_flops == pytest.approx(695.04e9)  # 4 x 4.056 x 32 + 4 x 2.748 x 16 = 519.168 + 175.872
    assert m4_pro.peak_fp32_flops == pytest.approx(1606.4e9)  # 10 x 4.5 x 32 + 4 x 2.6 x 16 = 1440 + 166.4


def test_apple_cpu_row_needs_the_exact_variant() -> None:
    assert apple_cpu_row("Apple M1 Pro", 6, 2) is not None  # binned 8-core M1 Pro
    assert apple_cpu_row("Apple M1", 8, 2) is None
    assert apple_cpu_row("Apple M7", 4, 4) is None


# ------------------------------------------------------------------------------------ the table file


def test_the_table_ships_as_package_data() -> None:
    assert resources.files("neural_cost.hardware").joinpath("chips.toml").is_file()


def test_load_tables_is_cached() -> None:
    assert load_tables() is load_tables()


def test_table_rows_lists_every_row_once() -> None:
    rows = table_rows()
    assert len(rows) == len(DATASHEET) + len(APPLE_GPUS) + len(APPLE_CPUS)
    assert len({row.key for row in rows}) == len(rows)
    assert [type(row) for row in rows[:1]] == [GpuRow]
    assert all(row.to_dict()["key"] == row.key for row in rows)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (gpu_row("x", '"A"') + gpu_row("x", '"B"'), "key 'x' appears in both"),
        (gpu_row("x", '"A"', "fp32 = -1.0"), r"peak_tflops.fp32 = -1.0 must be a positive number"),
        (gpu_row("x", '"A"', "fp32 = 0"), r"peak_tflops.fp32 = 0 must be a positive number"),
        (gpu_row("x", '"A"', "fp32 = true"), r"peak_tflops.fp32 = True must be a positive number"),
        (gpu_row("x", '"A"', "fp32 = 1.0, fp12 = 2.0"), r"peak_tflops.fp12 is not a dtype the table knows"),
        (gpu_row("x", '"A"', "fp32 = 1.0, fp16 = 2.0, float16 = 2.0"), "names float16 twice"),
        (gpu_row("x", '"A"', "bf16 = 2.0"), "peak_tflops needs fp32"),
        (gpu_row("x", '"A"', extra="speed = 3"), "unknown field.*speed"),
        (gpu_row("x", '"A"') + gpu_row("y", '"NVIDIA a"'), "pattern 'NVIDIA a' appears in both row 'x' and row 'y'"),
        (gpu_row("x", '"NVIDIA"'), "only brand words"),
        (gpu_row("x", ""), "patterns = \\[\\] must be a non-empty list"),
        ('[[tpu]]\nkey = "v5"\n', "unknown table.*tpu"),
        ("[[gpu]\n", "not valid TOML"),
        (
            '[[apple_gpu]]\nkey = "a"\nchip = "M1"\ngpu_cores = 8\nmemory_bandwidth_gb_s = 68\nsource = "s"\n'
            '[[apple_gpu]]\nkey = "b"\nchip = "Apple M1"\ngpu_cores = 8\nmemory_bandwidth_gb_s = 70\nsource = "s"\n',
            "M1 with 8 GPU cores appears in both row 'a' and row 'b'",
        ),
        (
            '[[apple_gpu]]\nkey = "a"\nchip = "M1"\ngpu_cores = 8.5\nmemory_bandwidth_gb_s = 68\nsource = "s"\n',
            "gpu_cores = 8.5 must be a whole number",
        ),
        (
            '[[apple_cpu]]\nkey = "c"\nchip = "M1"\np_cores = 4\ne_cores = 4\np_clock_ghz = -3.2\n'
            'p_flops_per_cycle = 32\ne_flops_per_cycle = 16\nsource = "s"\n',
            "p_clock_ghz = -3.2 must be a positive number",
        ),
    ],
)
def test_bad_tables_are_refused_with_the_row_and_field_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(HardwareError, match=message):
        write_table(tmp_path, text)


def test_errors_name_the_file_and_row(tmp_path: Path) -> None:
    with pytest.raises(HardwareError) as caught:
        write_table(tmp_path, gpu_row("ok", '"A"') + gpu_row("bad", '"B"', "fp32 = -1.0"))
    assert f"{tmp_path / 'chips.toml'}: [[gpu]] row 2 (key 'bad')" in str(caught.value)


def test_a_missing_table_file_is_a_hardware_error(tmp_path: Path) -> None:
    with pytest.raises(HardwareError, match="cannot read chip table"):
        load_tables(tmp_path / "absent.toml")


def test_a_custom_table_loads(tmp_path: Path) -> None:
    tables = write_table(tmp_path, gpu_row("x", '"Custom X1"', "fp32 = 10.0, bf16 = 80.0"))
    row = match_gpu("Custom X1", tables)
    assert row is not None
    spec = gpu_spec(row)
    assert spec.peak("bfloat16") == 80e12 and spec.memory_capacity == 16_000_000_000
