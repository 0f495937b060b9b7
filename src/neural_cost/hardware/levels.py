"""The memory hierarchy of a device as ``MemoryLevel`` records, nearest first, DRAM last.

CPU caches come from sysfs (``/sys/devices/system/cpu/cpu*/cache/index*/{level,type,size,
shared_cpu_list}``): instruction caches are left out (kernels' data never lives there); a
cache is per core when every instance is shared only by one core's SMT siblings
(``topology/thread_siblings_list``). DRAM's capacity is /proc/meminfo's MemTotal and its
bandwidth the host's cached all-core copy figure. Apple Silicon: the performance cluster's
L1d and L2 from sysctl, then the unified memory. NVIDIA: the L2 only where the chip table
states it, then the device memory. A level whose size cannot be read is a note and is left
out, never guessed: a guessed capacity would score kernels at a level they may not fit.

Measured cache bandwidths (``level_probes.py``) are kept in the host cache entry's
``levels`` section and attached here by name. A nearer level is never slower than a farther
one: where a probe read a level below a farther level's figure (a shared machine's slow
spell — a 2-vCPU Zen 3 guest read L1d at 114 GB/s beside L2's 192, and L2 at 143 beside
L3's 160 — never a property of the caches), the level is scored at the farther one's figure
(``nearer_never_slower``, among the caches) and a note says so: a bound must not score data
held nearer as slower to reach. A cache measured below main memory is another matter, left to
the bound (``analysis.kernels.Levels.implausible``: not used, as a VM's guest can see more of
a shared cache than it gets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.units import format_si
from .cpuinfo import parse_meminfo_total
from .dram import _parse_cache_size
from .host_cache import LEVEL_PROBE_REVISION
from .spec import MemoryLevel

SYSFS_CPU = Path("/sys/devices/system/cpu")


def parse_cpu_list(text: str) -> frozenset[int]:
    """sysfs CPU lists read like ``0-3,8,10-11``; an unreadable list is empty."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            return frozenset()
        cpus.update(range(int(first), int(last if dash else first) + 1))
    return frozenset(cpus)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu_numbers(root: Path) -> list[int]:
    return sorted(int(p.name[3:]) for p in root.glob("cpu[0-9]*") if p.name[3:].isdigit())


@dataclasses.dataclass
class _Seen:
    """What sysfs says about one cache level, gathered over every CPU."""

    level: int
    sizes: dict[int, str] = dataclasses.field(default_factory=dict)  # bytes → as sysfs spells it
    instances: set[frozenset[int]] = dataclasses.field(default_factory=set)
    unsized: list[int] = dataclasses.field(default_factory=list)  # CPUs whose size is unreadable
    where: str = ""


def read_cpu_levels(root: Path = SYSFS_CPU) -> tuple[tuple[MemoryLevel, ...], tuple[str, ...]]:
    """The host's data caches from sysfs (``root`` is ``/sys/devices/system/cpu`` or a fixture
    tree), nearest first, and a note for every level left out. Bandwidths are None."""
    seen: dict[str, _Seen] = {}
    siblings: dict[int, frozenset[int]] = {}
    cpus = _cpu_numbers(root)
    for cpu in cpus:
        siblings[cpu] = parse_cpu_list(_read(root / f"cpu{cpu}/topology/thread_siblings_list") or "") or frozenset(
            {cpu}
        )
        for index in sorted((root / f"cpu{cpu}/cache").glob("index*")):
            level_text, kind = _read(index / "level"), _read(index / "type")
            if kind == "Instruction" or level_text is None or not level_text.isdigit():
                continue
            name = f"L{level_text}" + ("d" if kind == "Data" else "")
            entry = seen.setdefault(
                name, _Seen(int(level_text), where=f"{index.parent.parent.name}/cache/{index.name}")
            )
            raw = _read(index / "size")
            size = _parse_cache_size(raw) if raw else None
            if size is None:
                entry.unsized.append(cpu)
            else:
                entry.sizes[size] = raw or ""
            entry.instances.add(parse_cpu_list(_read(index / "shared_cpu_list") or "") or frozenset({cpu}))
    levels: list[MemoryLevel] = []
    notes: list[str] = []
    for name, entry in sorted(seen.items(), key=lambda item: (item[1].level, item[0])):
        if entry.unsized:
            listed = ", ".join(str(c) for c in entry.unsized[:8])
            notes.append(f"{name}: sysfs gives no size for CPU {listed}; the level is left out, never guessed")
            continue
        size = min(entry.sizes)
        if len(entry.sizes) > 1:
            spelled = ", ".join(entry.sizes[s] for s in sorted(entry.sizes))
            notes.append(f"{name}: sysfs sizes differ between CPUs ({spelled}); the smallest is the capacity")
        shared_by = max(len(group) for group in entry.instances)
        per_core = all(group <= siblings.get(min(group), frozenset({min(group)})) for group in entry.instances)
        sharing = "per core" if per_core else f"shared by {shared_by} logical CPUs"
        levels.append(
            MemoryLevel(
                name=name,
                capacity_bytes=size,
                source=f"sysfs {entry.where}: {entry.sizes[size]}, {sharing}, {len(entry.instances)} instance(s)",
                per_core=per_core,
                shared_by=shared_by,
                instances=len(entry.instances),
            )
        )
    if not seen:
        notes.append(f"no CPU cache sizes in sysfs ({root}); cache levels are left out, never guessed")
    return tuple(levels), tuple(notes)


def dram_level(
    meminfo_text: str | None, bandwidth: float | None, bandwidth_source: str | None, logical_cpus: int = 1
) -> tuple[MemoryLevel | None, str | None]:
    """DRAM: MemTotal's capacity and the cached all-core bandwidth; None and a note without MemTotal."""
    capacity = parse_meminfo_total(meminfo_text) if meminfo_text is not None else None
    if capacity is None:
        return None, "DRAM: /proc/meminfo has no MemTotal; the level is left out, never guessed"
    level = MemoryLevel(
        "DRAM",
        capacity,
        bandwidth,
        "/proc/meminfo MemTotal",
        shared_by=max(logical_cpus, 1),
        bandwidth_source=bandwidth_source if bandwidth is not None else None,
    )
    return level, None


def with_measured(levels: tuple[MemoryLevel, ...], section: Mapping[str, Any] | None) -> tuple[MemoryLevel, ...]:
    """Attach the cache entry's ``levels`` figures (by level name) to levels without a bandwidth.
    A figure measured for another capacity (the machine key changed little) or by another probe
    revision (``stale_levels``) is not attached."""
    if not section:
        return levels
    attached = []
    for level in levels:
        figure = section.get(level.name)
        if (
            level.bandwidth is None
            and isinstance(figure, Mapping)
            and figure.get("capacity_bytes") == level.capacity_bytes
            and figure.get("probe_revision") == LEVEL_PROBE_REVISION
        ):
            attached.append(
                dataclasses.replace(
                    level,
                    bandwidth=float(figure["bytes_per_second"]),
                    bandwidth_source=level_source(figure),
                )
            )
        else:
            attached.append(level)
    return tuple(attached)


def stale_levels(section: Mapping[str, Any] | None) -> str | None:
    """A note naming the cached level figures another probe revision measured (none: None); they are not used."""
    stale = {
        name: figure.get("probe_revision", 1)
        for name, figure in (section or {}).items()
        if isinstance(figure, Mapping) and figure.get("probe_revision") != LEVEL_PROBE_REVISION
    }
    if not stale:
        return None
    named = ", ".join(f"{name} (revision {revision})" for name, revision in stale.items())
    return (
        f"cached bandwidths of {named} were measured by another level probe (this is revision "
        f"{LEVEL_PROBE_REVISION}) and are not used"
    )


def level_source(figure: Mapping[str, Any]) -> str:
    """``measured, in-place on 2 threads, 24.0 KiB per thread, best of 9, spread 3.1%, cached 2026-12-01``."""
    return (
        f"measured, {figure['pattern']} on {figure['threads']} thread(s), "
        f"{figure['bytes_per_thread'] / 1024:.1f} KiB per thread, best of {figure['samples']}, "
        f"spread {100 * figure['spread']:.1f}%, {figure['method']}, cached {figure['date']}"
    )


def nearer_never_slower(levels: tuple[MemoryLevel, ...]) -> tuple[tuple[MemoryLevel, ...], tuple[str, ...]]:
    """Raise each level measured below a farther level's bandwidth to the fastest farther figure (levels run
    nearest first); its source keeps what was measured. One note per raised level; none where all are in order."""
    raised: list[MemoryLevel] = []
    notes: list[str] = []
    fastest: MemoryLevel | None = None
    for level in reversed(levels):
        if level.bandwidth is None:
            raised.append(level)
            continue
        if fastest is not None and fastest.bandwidth is not None and level.bandwidth < fastest.bandwidth:
            own, theirs = format_si(level.bandwidth, "B/s"), format_si(fastest.bandwidth, "B/s")
            raised.append(
                dataclasses.replace(
                    level,
                    bandwidth=fastest.bandwidth,
                    bandwidth_source=(
                        f"{fastest.name}'s {theirs}: a nearer level is never slower (measured {own}: "
                        f"{level.bandwidth_source})"
                    ),
                )
            )
            notes.append(
                f"{level.name} measured {own}, below {fastest.name}'s {theirs}: scored at {theirs}, since data "
                f"held nearer is never slower to reach (the probe ran slow; `neural-cost hardware --recalibrate` "
                f"measures again)"
            )
            continue
        raised.append(level)
        fastest = level
    return tuple(reversed(raised)), tuple(reversed(notes))


def host_levels(
    *,
    meminfo_text: str | None,
    dram_bandwidth: float | None,
    dram_source: str | None,
    logical_cpus: int,
    measured: Mapping[str, Any] | None = None,
    root: Path = SYSFS_CPU,
) -> tuple[tuple[MemoryLevel, ...], tuple[str, ...]]:
    """The host's caches (sysfs) with their measured bandwidths, then DRAM; notes for what is left out."""
    caches, notes = read_cpu_levels(root)
    dram, note = dram_level(meminfo_text, dram_bandwidth, dram_source, logical_cpus)
    levels = with_measured(caches, measured)
    if dram is not None and levels and dram.capacity_bytes < levels[-1].capacity_bytes:
        note, dram = f"DRAM: MemTotal {dram.capacity_bytes} B is smaller than {levels[-1].name}; left out", None
    levels, raised = nearer_never_slower(levels)  # caches among themselves: one below DRAM is `Levels.implausible`
    levels = levels + ((dram,) if dram is not None else ())
    unmeasured = [level.name for level in levels if level.bandwidth is None]
    extra = [text for text in (note, stale_levels(measured), *raised) if text]
    if unmeasured:
        extra.append(
            f"no measured bandwidth yet for {', '.join(unmeasured)}: `neural-cost hardware --calibrate` measures it"
        )
    return levels, (*notes, *extra)


def _sysctl_int(values: Mapping[str, str], key: str) -> int | None:
    text = values.get(key, "")
    return int(text) if text.isdigit() and int(text) > 0 else None


def apple_levels(
    sysctl_text: str, bandwidth: float | None, bandwidth_source: str | None
) -> tuple[tuple[MemoryLevel, ...], tuple[str, ...]]:
    """Apple Silicon: the performance cores' L1d (per core) and L2 (per cluster) from sysctl,
    then the unified memory (hw.memsize) at the table's bandwidth."""
    from .apple import _sysctl_values

    values = _sysctl_values(sysctl_text)
    levels: list[MemoryLevel] = []
    notes: list[str] = []
    prefix = "hw.perflevel0." if any(key.startswith("hw.perflevel0.") for key in values) else "hw."
    cores = _sysctl_int(values, f"{prefix}physicalcpu")
    l1d = _sysctl_int(values, f"{prefix}l1dcachesize")
    if l1d is None:
        notes.append(f"L1d: sysctl has no {prefix}l1dcachesize; the level is left out, never guessed")
    else:
        levels.append(
            MemoryLevel("L1d", l1d, None, f"sysctl {prefix}l1dcachesize", per_core=True, instances=cores or 1)
        )
    l2 = _sysctl_int(values, f"{prefix}l2cachesize")
    per_l2 = _sysctl_int(values, f"{prefix}cpusperl2") or 1
    if l2 is None:
        notes.append(f"L2: sysctl has no {prefix}l2cachesize; the level is left out, never guessed")
    else:
        clusters = max((cores or per_l2) // per_l2, 1)
        source = f"sysctl {prefix}l2cachesize, shared by {prefix}cpusperl2 = {per_l2} cores"
        levels.append(MemoryLevel("L2", l2, None, source, per_core=per_l2 == 1, shared_by=per_l2, instances=clusters))
    if prefix == "hw.perflevel0.":
        notes.append("cache levels are the performance cores'; the efficiency cores have their own")
    notes.append("the system level cache is not reported by sysctl; it is left out, never guessed")
    unified = unified_memory_level(
        _sysctl_int(values, "hw.memsize"), _sysctl_int(values, "hw.ncpu"), bandwidth, bandwidth_source
    )
    if unified is None:
        notes.append("unified memory: sysctl has no hw.memsize; the level is left out, never guessed")
    return (*levels, *((unified,) if unified is not None else ())), tuple(notes)


def unified_memory_level(
    memory_bytes: int | None, logical_cpus: int | None, bandwidth: float | None, bandwidth_source: str | None
) -> MemoryLevel | None:
    """Apple Silicon's unified memory (hw.memsize), shared by the CPU and the GPU; None without a size."""
    if memory_bytes is None:
        return None
    return MemoryLevel(
        "unified memory",
        memory_bytes,
        bandwidth,
        "sysctl hw.memsize (shared by the CPU and the GPU)",
        shared_by=logical_cpus or 1,
        bandwidth_source=bandwidth_source if bandwidth is not None else None,
    )


def gpu_levels(
    row: Any, memory_total_bytes: int | None, memory_source: str
) -> tuple[tuple[MemoryLevel, ...], tuple[str, ...]]:
    """An NVIDIA GPU: its L2 where the chip table states one, then the device memory."""
    levels: list[MemoryLevel] = []
    notes: list[str] = []
    l2 = getattr(row, "l2_bytes", None)
    if isinstance(l2, int) and l2 > 0:
        levels.append(MemoryLevel("L2", l2, None, f"table: {row.source}", shared_by=1))
    else:
        notes.append(f"L2: chips.toml states no L2 size for the {row.name}; the level is left out, never guessed")
    capacity = memory_total_bytes or row.memory_capacity
    source = memory_source if memory_total_bytes else f"table: {row.source}"
    levels.append(
        MemoryLevel(
            "device memory",
            capacity,
            row.memory_bandwidth,
            source,
            bandwidth_source=f"table: {row.source} ({format_si(row.memory_bandwidth, 'B/s')})",
        )
    )
    return tuple(levels), tuple(notes)
