"""Chip tables as data: NVIDIA GPUs and Apple Silicon GPUs/CPUs, read from ``chips.toml``.

The figures live in ``chips.toml``, one reviewable file in which every row cites its
datasheet. This module reads that file, checks it, finds the row for a device name, and
turns a row into a :class:`HardwareSpec`. Tensor-core figures are dense (never 2:4-sparse);
units are decimal SI.

Matching an NVIDIA name (``match_gpu``): case, a leading "NVIDIA"/"Tesla"/"GeForce" and
dashes vs spaces are ignored, and a row's pattern matches when its words appear, in order and
next to each other, among the name's words ("A10" is not a word of "A10G" or "A100"). The row
whose matching pattern is longest wins, so "NVIDIA A100-SXM4-80GB" takes the SXM4 80GB row
even if a generic "A100" row comes first; a tie between two rows is an error in the table. A
MIG slice ("... MIG 1g.10gb") has a fraction of the chip's SMs and bandwidth, so it matches
no row: the table describes whole chips.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.attrs import FrozenAttrs
from ..core.dtypes import canonical_dtype
from ..core.errors import DTypeError, HardwareError
from .spec import HardwareSpec

TERA = 1e12
GIGA = 1e9
MEGA = 1e6

# Apple describes each GPU core as 128 ALUs; a fused multiply-add is 2 FLOPs.
APPLE_GPU_ALUS_PER_CORE = 128

# The element types a [[gpu]] row may give a peak for (spelled fp64, fp32, tf32, bf16, fp16, fp8_e4m3, int8).
TABLE_DTYPES = ("float64", "float32", "tfloat32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "int8")

_BRAND_WORDS = frozenset({"nvidia", "tesla", "geforce"})
_TABLES = ("gpu", "apple_gpu", "apple_cpu")
_PACKAGED = "neural_cost/hardware/chips.toml"


@dataclasses.dataclass(frozen=True, slots=True)
class GpuRow:
    """One NVIDIA GPU: dense peaks by canonical dtype (FLOP/s), bandwidth (B/s), capacity (B)."""

    key: str
    name: str
    patterns: tuple[str, ...]
    excludes: tuple[str, ...]
    peak_flops: Mapping[str, float]
    memory_bandwidth: float
    memory_capacity: int
    source: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "gpu")


@dataclasses.dataclass(frozen=True, slots=True)
class AppleGpuRow:
    """One Apple GPU variant. ``fp32_flops`` = cores × 128 ALUs × 2 × clock, or None without a clock."""

    key: str
    chip: str
    gpu_cores: int
    gpu_clock_hz: float | None
    memory_bandwidth: float
    source: str
    note: str = ""

    @property
    def name(self) -> str:
        return f"Apple {self.chip} ({self.gpu_cores}-core GPU)"

    @property
    def fp32_flops(self) -> float | None:
        if self.gpu_clock_hz is None:
            return None
        return self.gpu_cores * APPLE_GPU_ALUS_PER_CORE * 2 * self.gpu_clock_hz

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "apple_gpu", name=self.name, fp32_flops=self.fp32_flops)


@dataclasses.dataclass(frozen=True, slots=True)
class AppleCpuRow:
    """One Apple CPU variant; peak = P·clock_P·flops_P + E·clock_E·flops_E, or None without clocks."""

    key: str
    chip: str
    p_cores: int
    e_cores: int
    p_clock_hz: float | None
    e_clock_hz: float | None
    p_flops_per_cycle: int
    e_flops_per_cycle: int
    source: str
    note: str = ""

    @property
    def name(self) -> str:
        return f"Apple {self.chip} ({self.p_cores}P+{self.e_cores}E CPU)"

    @property
    def peak_fp32_flops(self) -> float | None:
        if self.p_clock_hz is None or (self.e_cores and self.e_clock_hz is None):
            return None
        efficiency = self.e_cores * (self.e_clock_hz or 0.0) * self.e_flops_per_cycle
        return self.p_cores * self.p_clock_hz * self.p_flops_per_cycle + efficiency

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "apple_cpu", name=self.name, peak_fp32_flops=self.peak_fp32_flops)


TableRow = GpuRow | AppleGpuRow | AppleCpuRow


def _as_dict(row: TableRow, table: str, **derived: Any) -> dict[str, Any]:
    """A row as JSON-ready data (what ``neural-cost hardware --json`` prints), derived figures included."""
    data: dict[str, Any] = {"table": table}
    for field in dataclasses.fields(row):
        value = getattr(row, field.name)
        data[field.name] = (
            list(value) if isinstance(value, tuple) else dict(value) if isinstance(value, Mapping) else value
        )
    return {**data, **derived}


@dataclasses.dataclass(frozen=True, slots=True)
class ChipTables:
    gpus: tuple[GpuRow, ...]
    apple_gpus: tuple[AppleGpuRow, ...]
    apple_cpus: tuple[AppleCpuRow, ...]
    path: str


class _Fields:
    """One TOML row being read: typed getters whose errors name the file, the row and the field."""

    def __init__(self, raw: Any, where: str, known: tuple[str, ...]) -> None:
        if not isinstance(raw, dict):
            raise HardwareError(f"{where} must be a table of fields, got {type(raw).__name__}")
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise HardwareError(f"{where}: unknown field(s) {', '.join(unknown)}; a row has {', '.join(known)}")
        self.raw: dict[str, Any] = raw
        self.where = where

    def text(self, field: str, required: bool = True) -> str:
        value = self.raw.get(field, None if required else "")
        if not isinstance(value, str) or (required and not value.strip()):
            raise HardwareError(f"{self.where}: {field} = {value!r} must be a non-empty string")
        return value

    def texts(self, field: str, required: bool = True) -> tuple[str, ...]:
        value = self.raw.get(field, None if required else [])
        if not isinstance(value, list) or (required and not value) or not all(isinstance(v, str) for v in value):
            raise HardwareError(f"{self.where}: {field} = {value!r} must be a non-empty list of strings")
        return tuple(value)

    def number(self, field: str, unit: str) -> float:
        return _positive(self.raw.get(field), f"{self.where}: {field}", unit)

    def optional_number(self, field: str, unit: str) -> float | None:
        return self.number(field, unit) if field in self.raw else None

    def count(self, field: str, minimum: int = 1) -> int:
        value = self.raw.get(field)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise HardwareError(f"{self.where}: {field} = {value!r} must be a whole number >= {minimum}")
        return value


def _positive(value: Any, label: str, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise HardwareError(f"{label} = {value!r} must be a positive number ({unit})")
    return float(value)


def _gpu_peaks(raw: Any, where: str) -> FrozenAttrs:
    if not isinstance(raw, dict) or not raw:
        raise HardwareError(f"{where}: peak_tflops must be a table such as {{ fp32 = 67.0, bf16 = 989.5 }}")
    peaks: dict[str, float] = {}
    for spelled, value in raw.items():
        try:
            dtype = canonical_dtype(spelled, f"{where}: peak_tflops key")
        except DTypeError:
            dtype = ""
        if dtype not in TABLE_DTYPES:
            raise HardwareError(
                f"{where}: peak_tflops.{spelled} is not a dtype the table knows; "
                f"use fp64, fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2 or int8"
            )
        if dtype in peaks:
            raise HardwareError(f"{where}: peak_tflops names {dtype} twice; give one peak per dtype")
        peaks[dtype] = _positive(value, f"{where}: peak_tflops.{spelled}", "TFLOPS, dense") * TERA
    if "float32" not in peaks:
        raise HardwareError(f"{where}: peak_tflops needs fp32 (the spec's peak_flops and fallback for other dtypes)")
    return FrozenAttrs(peaks)


def _read_gpu(raw: Any, where: str) -> GpuRow:
    row = _Fields(raw, where, ("key", "name", "patterns", "excludes", "peak_tflops", "memory_bandwidth_gb_s",
                               "memory_capacity_gb", "source", "note"))  # fmt: skip
    return GpuRow(
        key=row.text("key"),
        name=row.text("name"),
        patterns=row.texts("patterns"),
        excludes=row.texts("excludes", required=False),
        peak_flops=_gpu_peaks(row.raw.get("peak_tflops"), where),
        memory_bandwidth=row.number("memory_bandwidth_gb_s", "GB/s") * GIGA,
        memory_capacity=round(row.number("memory_capacity_gb", "GB, decimal") * GIGA),
        source=row.text("source"),
        note=row.text("note", required=False),
    )


def _read_apple_gpu(raw: Any, where: str) -> AppleGpuRow:
    row = _Fields(raw, where, ("key", "chip", "gpu_cores", "gpu_clock_mhz", "memory_bandwidth_gb_s", "source", "note"))
    clock = row.optional_number("gpu_clock_mhz", "MHz")
    return AppleGpuRow(
        key=row.text("key"),
        chip=row.text("chip"),
        gpu_cores=row.count("gpu_cores"),
        gpu_clock_hz=None if clock is None else clock * MEGA,
        memory_bandwidth=row.number("memory_bandwidth_gb_s", "GB/s") * GIGA,
        source=row.text("source"),
        note=row.text("note", required=False),
    )


def _read_apple_cpu(raw: Any, where: str) -> AppleCpuRow:
    row = _Fields(raw, where, ("key", "chip", "p_cores", "e_cores", "p_clock_ghz", "e_clock_ghz",
                               "p_flops_per_cycle", "e_flops_per_cycle", "source", "note"))  # fmt: skip
    p_clock = row.optional_number("p_clock_ghz", "GHz")
    e_clock = row.optional_number("e_clock_ghz", "GHz")
    return AppleCpuRow(
        key=row.text("key"),
        chip=row.text("chip"),
        p_cores=row.count("p_cores"),
        e_cores=row.count("e_cores", minimum=0),
        p_clock_hz=None if p_clock is None else p_clock * GIGA,
        e_clock_hz=None if e_clock is None else e_clock * GIGA,
        p_flops_per_cycle=row.count("p_flops_per_cycle"),
        e_flops_per_cycle=row.count("e_flops_per_cycle"),
        source=row.text("source"),
        note=row.text("note", required=False),
    )


def _rows(data: dict[str, Any], table: str, path: str) -> list[tuple[Any, str]]:
    rows = data.get(table, [])
    if not isinstance(rows, list):
        raise HardwareError(f"{path}: {table} must be an array of tables ([[{table}]] rows)")
    return [(raw, f"{path}: [[{table}]] row {i + 1}{_key_label(raw)}") for i, raw in enumerate(rows)]


def _key_label(raw: Any) -> str:
    return f" (key {raw['key']!r})" if isinstance(raw, dict) and isinstance(raw.get("key"), str) else ""


def parse_tables(text: str | bytes, path: str) -> ChipTables:
    """Read and check a chip table; every problem is a HardwareError naming the file, row and field."""
    try:
        data = tomllib.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HardwareError(f"{path} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(_TABLES))
    if unknown:
        raise HardwareError(f"{path}: unknown table(s) {', '.join(unknown)}; the file holds {', '.join(_TABLES)}")
    gpus = tuple(_read_gpu(raw, where) for raw, where in _rows(data, "gpu", path))
    apple_gpus = tuple(_read_apple_gpu(raw, where) for raw, where in _rows(data, "apple_gpu", path))
    apple_cpus = tuple(_read_apple_cpu(raw, where) for raw, where in _rows(data, "apple_cpu", path))
    tables = ChipTables(gpus, apple_gpus, apple_cpus, path)
    _check_unique(tables)
    return tables


def _check_unique(tables: ChipTables) -> None:
    def once(seen: dict[Any, str], value: Any, owner: str, what: str) -> None:
        if value in seen:
            raise HardwareError(f"{tables.path}: {what} appears in both {seen[value]} and {owner}; keep one")
        seen[value] = owner

    keys: dict[Any, str] = {}
    for row in table_rows(tables):
        once(keys, row.key, f"row {row.key!r}", f"key {row.key!r}")
    patterns: dict[Any, str] = {}
    for gpu in tables.gpus:
        for spelled in (*gpu.patterns, *gpu.excludes):
            if not gpu_name_words(spelled):
                raise HardwareError(f"{tables.path}: row {gpu.key!r} pattern {spelled!r} is only brand words")
        for spelled in gpu.patterns:
            once(patterns, gpu_name_words(spelled), f"row {gpu.key!r}", f"pattern {spelled!r}")
    variants: dict[Any, str] = {}
    for apple_gpu in tables.apple_gpus:
        what = f"{apple_gpu.chip} with {apple_gpu.gpu_cores} GPU cores"
        once(variants, (_chip_key(apple_gpu.chip), apple_gpu.gpu_cores), f"row {apple_gpu.key!r}", what)
    for cpu in tables.apple_cpus:
        what = f"{cpu.chip} with {cpu.p_cores}P+{cpu.e_cores}E cores"
        once(variants, (_chip_key(cpu.chip), cpu.p_cores, cpu.e_cores), f"row {cpu.key!r}", what)


@functools.cache
def _packaged_tables() -> ChipTables:
    return parse_tables(resources.files("neural_cost.hardware").joinpath("chips.toml").read_bytes(), _PACKAGED)


def load_tables(path: str | Path | None = None) -> ChipTables:
    """The packaged ``chips.toml`` (read once, cached), or the table at ``path`` (read each call)."""
    if path is None:
        return _packaged_tables()
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise HardwareError(f"cannot read chip table {path}: {exc.strerror or exc}") from None
    return parse_tables(text, str(path))


def table_rows(tables: ChipTables | None = None) -> tuple[TableRow, ...]:
    """Every row, in file order: NVIDIA GPUs, then Apple GPUs, then Apple CPUs."""
    t = tables or load_tables()
    return (*t.gpus, *t.apple_gpus, *t.apple_cpus)


def gpu_name_words(name: str) -> tuple[str, ...]:
    """A GPU name as lower-case words, dashes and underscores as spaces, leading brand words dropped."""
    words = name.lower().replace("-", " ").replace("_", " ").split()
    start = 0
    while start < len(words) and words[start] in _BRAND_WORDS:
        start += 1
    return tuple(words[start:])


def _contains(words: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    n = len(pattern)
    return any(words[i : i + n] == pattern for i in range(len(words) - n + 1))


def match_gpu(name: str, tables: ChipTables | None = None) -> GpuRow | None:
    """The most specific [[gpu]] row for an NVML/nvidia-smi name, or None (see the module docstring)."""
    words = gpu_name_words(name)
    if not words or "mig" in words:
        return None
    best: list[tuple[int, GpuRow]] = []
    for row in (tables or load_tables()).gpus:
        if any(_contains(words, gpu_name_words(e)) for e in row.excludes):
            continue
        scores = [len(" ".join(p)) for p in map(gpu_name_words, row.patterns) if _contains(words, p)]
        if scores:
            best.append((max(scores), row))
    if not best:
        return None
    best.sort(key=lambda scored: -scored[0])
    if len(best) > 1 and best[1][0] == best[0][0]:
        raise HardwareError(
            f"{name!r} matches rows {best[0][1].key!r} and {best[1][1].key!r} equally well; "
            f"give one of them a more specific pattern in chips.toml"
        )
    return best[0][1]


def _chip_key(chip: str) -> str:
    words = chip.lower().split()
    return " ".join(words[1:] if words[:1] == ["apple"] else words)


def match_apple_gpu(chip: str, gpu_cores: int | None, tables: ChipTables | None = None) -> AppleGpuRow | None:
    """The row for ``chip`` ("Apple M3 Max" or "M3 Max") with ``gpu_cores``; None when not in the table.

    Variants of one chip differ (a 30-core M3 Max has 300 GB/s, the 40-core one 400 GB/s), so
    ``gpu_cores=None`` is an error when the chip has more than one variant.
    """
    if gpu_cores is not None and (isinstance(gpu_cores, bool) or not isinstance(gpu_cores, int)):
        raise HardwareError(f"gpu_cores={gpu_cores!r} must be a whole number of GPU cores or None")
    rows = [r for r in (tables or load_tables()).apple_gpus if _chip_key(r.chip) == _chip_key(chip)]
    if gpu_cores is not None:
        return next((r for r in rows if r.gpu_cores == gpu_cores), None)
    if len(rows) > 1:
        cores = " or ".join(str(r.gpu_cores) for r in rows)
        raise HardwareError(
            f"{chip} comes with {cores} GPU cores, and the variants differ in bandwidth or peak; "
            f"pass gpu_cores (system_profiler SPDisplaysDataType reports it)"
        )
    return rows[0] if rows else None


def apple_cpu_row(chip: str, p_cores: int, e_cores: int, tables: ChipTables | None = None) -> AppleCpuRow | None:
    """The row for ``chip`` with ``p_cores`` performance and ``e_cores`` efficiency cores, or None."""
    key = _chip_key(chip)
    rows = (tables or load_tables()).apple_cpus
    return next((r for r in rows if _chip_key(r.chip) == key and (r.p_cores, r.e_cores) == (p_cores, e_cores)), None)


def gpu_spec(row: GpuRow) -> HardwareSpec:
    """A GPU row as a spec: ``peak_flops`` is the FP32 peak, every dtype the row lists has its own."""
    return HardwareSpec(
        name=row.name,
        peak_flops=row.peak_flops["float32"],
        memory_bandwidth=row.memory_bandwidth,
        kind="gpu",
        peak_flops_by_dtype=row.peak_flops,
        memory_capacity=row.memory_capacity,
        source=f"table: {row.source}",
    )


def apple_gpu_spec(row: AppleGpuRow) -> HardwareSpec:
    """An Apple GPU row as a spec (FP32 only); an error for rows whose FP32 peak is not confirmed."""
    fp32 = row.fp32_flops
    if fp32 is None or row.gpu_clock_hz is None:
        raise HardwareError(
            f"chips.toml has no FP32 peak for the {row.name} (row {row.key!r}: its GPU clock is not confirmed); "
            f"measure one with calibrate(device='mps') through a framework that runs there, or pass "
            f"HardwareSpec(name=..., peak_flops=..., memory_bandwidth={row.memory_bandwidth / GIGA:g}e9, kind='gpu')"
        )
    formula = f"{row.gpu_cores} cores x {APPLE_GPU_ALUS_PER_CORE} ALUs x 2 x {row.gpu_clock_hz / MEGA:g} MHz"
    return HardwareSpec(
        name=row.name,
        peak_flops=fp32,
        memory_bandwidth=row.memory_bandwidth,
        kind="gpu",
        peak_flops_by_dtype={"float32": fp32},
        source=f"table: {row.source}; FP32 = {formula}",
    )
