"""Linux /proc/cpuinfo parsing and the x86 SIMD rate table behind the host-CPU peak formula.

Everything here is a pure function of text or flags: reading files from the live machine
lives in ``host.py``, so recorded cpuinfo texts from other machines test the same code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import HardwareError


@dataclass(frozen=True, slots=True)
class CpuInfo:
    """What /proc/cpuinfo says about a machine, and which line each number came from.

    ``clock_hz`` is None when the text has no ``cpu MHz`` line and no maximum frequency
    was passed (ARM and POWER kernels print neither). ``flags`` are the ISA flags every
    processor reports (their intersection); empty on non-x86 kernels, which print
    ``Features`` instead.
    """

    model_name: str | None
    vendor: str | None
    family: int | None
    model: int | None
    logical_cpus: int
    physical_cores: int
    cores_source: str
    sockets: int
    clock_hz: float | None
    clock_source: str | None
    flags: frozenset[str]


@dataclass(frozen=True, slots=True)
class SimdRate:
    """Per-core, per-cycle peak of one dtype and the ISA extension that implies it."""

    flops_per_cycle: int
    isa: str


# Tiers, best first: the first tier whose flags are all present sets the rate.
# FP32 FLOPs/cycle/core = FMA units × lanes × 2 (a fused multiply-add is 2 FLOPs).
# AVX-512's 64 assumes two 512-bit FMA ports (2 × 16 lanes × 2), true of server Xeons
# (Skylake-SP Gold 6xxx / Platinum and later); Xeon Bronze/Silver and client Ice/Tiger Lake
# have half, which no flag tells. AVX2+FMA's 32 assumes two 256-bit FMA ports (Haswell and
# later, Zen 2 and later). Without FMA, AVX and SSE issue one add and one multiply per cycle
# (8 + 8 and 4 + 4 lanes). The AMD parts whose family tells their narrower units are
# halved by ``_HALF_WIDTH`` below.
_FP32_TIERS: tuple[tuple[frozenset[str], SimdRate], ...] = (
    (frozenset({"avx512f"}), SimdRate(64, "AVX-512, 2 FMA")),
    (frozenset({"avx2", "fma"}), SimdRate(32, "AVX2+FMA, 2 FMA")),
    (frozenset({"avx"}), SimdRate(16, "AVX, add + mul")),
    (frozenset({"sse"}), SimdRate(8, "SSE, add + mul")),
)

# AMX tile multiply: 1024 bf16 FLOPs and 2048 int8 ops per cycle per core (Intel's Sapphire
# Rapids figures). Without AMX, AVX512_BF16 (vdpbf16ps: 32 bf16 pairs into 16 FP32 lanes) is
# twice the FP32 rate and AVX512_VNNI (vpdpbusd: 64 int8 products per 512-bit register) four
# times; both assume the same two FMA ports as the FP32 tier.
_BF16_TIERS: tuple[tuple[frozenset[str], SimdRate], ...] = (
    (frozenset({"amx_bf16"}), SimdRate(1024, "AMX-BF16")),
    (frozenset({"avx512_bf16"}), SimdRate(128, "AVX512_BF16, 2 FMA")),
)
_INT8_TIERS: tuple[tuple[frozenset[str], SimdRate], ...] = (
    (frozenset({"amx_int8"}), SimdRate(2048, "AMX-INT8")),
    (frozenset({"avx512_vnni"}), SimdRate(256, "AVX512_VNNI, 2 FMA")),
)


# AMD cores whose vector units are half the width the flags imply, by (vendor, family, lowest
# model, highest model): family 25 (0x19, Zen 3 and Zen 4) runs a 512-bit AVX-512 op as two
# halves on its 256-bit units, so Zen 4's AVX-512, AVX512_BF16 and AVX512_VNNI tiers do half
# the per-cycle work of two 512-bit ports (Zen 3 has no AVX-512: its AVX2 tier is full);
# family 23 (0x17) models below 0x30 (Zen, Zen+) and Hygon's family 24 (0x18, built on Zen)
# have 128-bit FMA units, half the AVX2+FMA tier. Family 26 (Zen 5) is left at the full rate:
# its server and desktop parts have 512-bit units.
# Each rule names the FP32 tier (``_FP32_TIERS``) it halves: the tier the flags select.
_HALF_WIDTH: tuple[tuple[str, int, int, int, str, str], ...] = (
    ("AuthenticAMD", 25, 0, 255, "AVX-512, 2 FMA", "512-bit ops on 256-bit units (AMD family 25)"),
    ("AuthenticAMD", 23, 0, 0x2F, "AVX2+FMA, 2 FMA", "128-bit FMA units (AMD family 23, model < 0x30)"),
    ("HygonGenuine", 24, 0, 255, "AVX2+FMA, 2 FMA", "128-bit FMA units (Hygon family 24)"),
)


def _half_width(vendor: str | None, family: int | None, model: int | None, fp32: SimdRate) -> str | None:
    """Why this core's FP32 tier ``fp32`` runs at half rate, or None where nothing says it does."""
    for maker, fam, low, high, tier, why in _HALF_WIDTH:
        known = (low, high) == (0, 255) or model is not None  # a model range needs the model line
        if (vendor, family, fp32.isa) == (maker, fam, tier) and known and low <= (model or 0) <= high:
            return why
    return None


def _first_tier(flags: frozenset[str], tiers: tuple[tuple[frozenset[str], SimdRate], ...]) -> SimdRate | None:
    for required, rate in tiers:
        if required <= flags:
            return rate
    return None


def x86_simd_rates(
    flags: Iterable[str], vendor: str | None = None, family: int | None = None, model: int | None = None
) -> dict[str, SimdRate]:
    """Per-core FLOPs (int8: ops) per cycle by dtype, with the ISA behind each, from x86 flags.

    float64 is half of float32 on every tier (half the lanes). A dtype without a
    dedicated instruction (bfloat16 without AVX512_BF16 or AMX, int8 without VNNI or AMX)
    has no entry: its work runs through wider types at their rate, not at a guessed one.
    ``vendor``, ``family`` and ``model`` (cpuinfo's ``vendor_id``, ``cpu family`` and
    ``model``) halve the SIMD tiers of the AMD cores with narrower units (``_HALF_WIDTH``:
    Zen 4's AVX-512, Zen and Zen+'s AVX2); the ISA label says so. AMX is not halved.
    Returns {} when no x86 SIMD flag is present (a non-x86 CPU).
    """
    flag_set = frozenset(flag.lower() for flag in flags)
    fp32 = _first_tier(flag_set, _FP32_TIERS)
    if fp32 is None:
        return {}
    half = _half_width(vendor, family, model, fp32)
    rates = {"float32": fp32}
    bf16 = _first_tier(flag_set, _BF16_TIERS)
    if bf16 is not None:
        rates["bfloat16"] = bf16
    int8 = _first_tier(flag_set, _INT8_TIERS)
    if int8 is not None:
        rates["int8"] = int8
    if half is not None:
        halved = {
            dtype: SimdRate(rate.flops_per_cycle // 2, f"{rate.isa.removesuffix(', 2 FMA')}, {half}")
            for dtype, rate in rates.items()
        }
        rates = {dtype: rate if rate.isa.startswith("AMX") else halved[dtype] for dtype, rate in rates.items()}
    rates["float64"] = SimdRate(rates["float32"].flops_per_cycle // 2, rates["float32"].isa)
    return {dtype: rates[dtype] for dtype in ("float32", "float64", "bfloat16", "int8") if dtype in rates}


def x86_flops_per_cycle(
    flags: Iterable[str], vendor: str | None = None, family: int | None = None, model: int | None = None
) -> dict[str, int]:
    """Per-core FLOPs (int8: ops) per cycle by dtype implied by x86 ISA flags.

    AVX-512 (avx512f) FP32 = 64, AVX2+FMA = 32, AVX = 16, SSE = 8; FP64 = half of FP32;
    bfloat16 = 1024 with AMX, 128 with AVX512_BF16; int8 = 2048 with AMX, 256 with
    AVX512_VNNI; AMD's narrower cores at half (see ``x86_simd_rates``, which names the ISA
    behind each number).
    """
    return {dtype: rate.flops_per_cycle for dtype, rate in x86_simd_rates(flags, vendor, family, model).items()}


def _processor_blocks(text: str) -> list[dict[str, str]]:
    """One dict per ``processor`` entry; a new ``processor`` key starts a new block."""
    blocks: list[dict[str, str]] = []
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "processor":
            blocks.append({})
        if blocks:
            blocks[-1].setdefault(key, value)
    return blocks


def _int_field(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _physical_cores(blocks: list[dict[str, str]]) -> tuple[int, str, int]:
    """(physical cores, how they were counted, sockets)."""
    socket_ids = {block["physical id"] for block in blocks if "physical id" in block}
    sockets = max(len(socket_ids), 1)
    if all("physical id" in block and "core id" in block for block in blocks):
        pairs = {(block["physical id"], block["core id"]) for block in blocks}
        return len(pairs), "unique (physical id, core id) pairs", sockets
    cores_per_socket = _int_field(blocks[0].get("cpu cores"))
    if cores_per_socket is not None and cores_per_socket > 0:
        return cores_per_socket * sockets, f"cpu cores {cores_per_socket} × {sockets} socket(s)", sockets
    return len(blocks), "logical CPU count (cpuinfo has no core topology)", sockets


def _mhz_clock(blocks: list[dict[str, str]]) -> float | None:
    """The highest ``cpu MHz`` of any processor, in Hz (the kernel's current frequency)."""
    clocks: list[float] = []
    for block in blocks:
        try:
            clocks.append(float(block["cpu mhz"]) * 1e6)
        except (KeyError, ValueError):
            continue
    positive = [clock for clock in clocks if clock > 0]
    return max(positive) if positive else None


def parse_cpuinfo(text: str, max_freq_hz: float | None = None) -> CpuInfo:
    """Parse Linux /proc/cpuinfo text (x86 layout; other layouts parse with fields missing).

    Physical cores are the unique (physical id, core id) pairs; without those lines,
    ``cpu cores`` × sockets; without that, the logical CPU count. The clock is
    ``max_freq_hz`` when given (read by the caller from cpufreq's ``cpuinfo_max_freq``),
    else the highest ``cpu MHz`` line: the kernel's current frequency, which is the fixed
    TSC rate on most VMs but can sit below the turbo clock (or idle-throttled) on bare metal.
    """
    blocks = _processor_blocks(text)
    if not blocks:
        raise HardwareError("cpuinfo text has no 'processor' entries; pass the contents of /proc/cpuinfo")
    physical_cores, cores_source, sockets = _physical_cores(blocks)
    clock_hz: float | None
    if max_freq_hz is not None:
        if isinstance(max_freq_hz, bool) or not isinstance(max_freq_hz, (int, float)) or not max_freq_hz > 0:
            raise HardwareError(f"max_freq_hz={max_freq_hz!r} must be a positive number of Hz")
        clock_hz, clock_source = float(max_freq_hz), "cpufreq cpuinfo_max_freq"
    else:
        clock_hz = _mhz_clock(blocks)
        clock_source = "cpuinfo 'cpu MHz'"
    flag_sets = [frozenset(block["flags"].split()) for block in blocks if "flags" in block]
    flags = frozenset.intersection(*flag_sets) if flag_sets else frozenset()
    return CpuInfo(
        model_name=blocks[0].get("model name") or None,
        vendor=blocks[0].get("vendor_id") or None,
        family=_int_field(blocks[0].get("cpu family")),
        model=_int_field(blocks[0].get("model")),
        logical_cpus=len(blocks),
        physical_cores=physical_cores,
        cores_source=cores_source,
        sockets=sockets,
        clock_hz=clock_hz,
        clock_source=clock_source if clock_hz is not None else None,
        flags=flags,
    )


def parse_meminfo_total(text: str) -> int | None:
    """MemTotal from /proc/meminfo text, in bytes (the kernel's ``kB`` is KiB)."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "MemTotal":
            parts = value.split()
            if parts and parts[0].isdigit():
                scale = 1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1
                return int(parts[0]) * scale or None
    return None
