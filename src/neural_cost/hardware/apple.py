"""Apple Silicon probing: the chip, its performance and efficiency cores, memory, GPU cores.

Read from ``sysctl -a`` and ``system_profiler SPDisplaysDataType -json``. The parsers are
pure functions of text, so recorded dumps from other Macs test them; ``probe_apple`` runs
the two commands through an injectable runner and never raises for "not a Mac".

What this deliberately does not read is a clock: ``hw.cpufrequency`` does not exist on
Apple Silicon (it does on Intel Macs), and falling back to a guessed clock is how a CPU
peak came out at 2 GFLOP/s per core. Apple Silicon clocks come from the per-generation
chip table, keyed by the brand (``machdep.cpu.brand_string``); a variant (a binned M3 Max) is told apart by its
GPU core count.
"""

from __future__ import annotations

import json
import platform
import subprocess
from dataclasses import dataclass
from typing import Any

from ..core.errors import HardwareError
from .nvidia import CommandRunner, run_tool

SYSCTL_TIMEOUT_S = 10.0
SYSTEM_PROFILER_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class PerfLevel:
    """One ``hw.perflevelN`` core cluster type: 0 is the fastest ("Performance")."""

    level: int
    name: str | None
    physical_cores: int | None
    logical_cores: int | None


@dataclass(frozen=True, slots=True)
class AppleSysctl:
    """What ``sysctl`` says about a Mac; None where the key is absent.

    ``brand`` is ``machdep.cpu.brand_string`` ("Apple M1", "Apple M3 Max"), the chip tables' key.
    ``performance_cores`` is ``hw.perflevel0.physicalcpu`` and ``efficiency_cores``
    ``hw.perflevel1.physicalcpu``; both are None on Intel Macs and on macOS 11, which has no
    perflevel keys. ``perf_levels`` lists every level (a chip with more than two core types
    has more than two). ``cpu_frequency_hz`` is ``hw.cpufrequency_max`` (else
    ``hw.cpufrequency``): present on Intel Macs only, None on Apple Silicon, never guessed.
    """

    brand: str | None
    is_apple_silicon: bool
    performance_cores: int | None
    efficiency_cores: int | None
    perf_levels: tuple[PerfLevel, ...]
    physical_cores: int | None
    logical_cpus: int | None
    memory_bytes: int | None
    cpu_frequency_hz: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "brand": self.brand,
            "is_apple_silicon": self.is_apple_silicon,
            "performance_cores": self.performance_cores,
            "efficiency_cores": self.efficiency_cores,
            "perf_levels": [
                {"level": p.level, "name": p.name, "physical_cores": p.physical_cores, "logical_cores": p.logical_cores}
                for p in self.perf_levels
            ],
            "physical_cores": self.physical_cores,
            "logical_cpus": self.logical_cpus,
            "memory_bytes": self.memory_bytes,
            "cpu_frequency_hz": self.cpu_frequency_hz,
        }


@dataclass(frozen=True, slots=True)
class AppleProbe:
    """The Mac's sysctl facts and GPU core count where read, and notes on what was not."""

    sysctl: AppleSysctl | None
    gpu_cores: int | None
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "sysctl": self.sysctl.to_dict() if self.sysctl is not None else None,
            "gpu_cores": self.gpu_cores,
            "notes": list(self.notes),
        }


def _sysctl_values(text: str) -> dict[str, str]:
    """``key: value`` lines into a dict (first occurrence wins); other lines are skipped."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        key = key.strip()
        # A sysctl name is dotted and has no spaces; continuation lines of multi-line values are not.
        if not colon or not key or " " in key or "." not in key:
            continue
        values.setdefault(key, value.strip())
    return values


def _positive_int(values: dict[str, str], key: str) -> int | None:
    text = values.get(key)
    if text is None:
        return None
    try:
        number = int(text)
    except ValueError:
        raise HardwareError(f"sysctl {key}={text!r} is not an integer") from None
    return number if number > 0 else None


def _perf_levels(values: dict[str, str]) -> tuple[PerfLevel, ...]:
    levels: list[PerfLevel] = []
    level = 0
    while any(key.startswith(f"hw.perflevel{level}.") for key in values):
        levels.append(
            PerfLevel(
                level=level,
                name=values.get(f"hw.perflevel{level}.name") or None,
                physical_cores=_positive_int(values, f"hw.perflevel{level}.physicalcpu"),
                logical_cores=_positive_int(values, f"hw.perflevel{level}.logicalcpu"),
            )
        )
        level += 1
    return tuple(levels)


def parse_sysctl(text: str) -> AppleSysctl:
    """Parse ``sysctl -a`` (or ``sysctl hw machdep.cpu``) text: ``key: value`` per line.

    Reads machdep.cpu.brand_string ("Apple M1", "Apple M3 Max"),
    hw.perflevel{N}.physicalcpu/.logicalcpu/.name, hw.physicalcpu, hw.ncpu, hw.memsize
    (bytes) and, where present (Intel Macs), hw.cpufrequency_max / hw.cpufrequency (Hz).
    A Mac is Apple Silicon when hw.optional.arm64 is 1 or the brand starts with "Apple".
    Raises ``HardwareError`` when the text has no sysctl lines at all, or a key read here
    holds a non-integer where an integer belongs.
    """
    values = _sysctl_values(text)
    if not values:
        raise HardwareError("sysctl text has no 'key: value' lines; pass the output of `sysctl -a`")
    brand = values.get("machdep.cpu.brand_string") or None
    levels = _perf_levels(values)
    by_level = {level.level: level for level in levels}
    frequency = _positive_int(values, "hw.cpufrequency_max") or _positive_int(values, "hw.cpufrequency")
    arm64 = values.get("hw.optional.arm64") == "1"
    return AppleSysctl(
        brand=brand,
        is_apple_silicon=arm64 or (brand is not None and brand.startswith("Apple ")),
        performance_cores=by_level[0].physical_cores if 0 in by_level else None,
        efficiency_cores=by_level[1].physical_cores if 1 in by_level else None,
        perf_levels=levels,
        physical_cores=_positive_int(values, "hw.physicalcpu"),
        logical_cpus=_positive_int(values, "hw.ncpu"),
        memory_bytes=_positive_int(values, "hw.memsize"),
        cpu_frequency_hz=frequency,
    )


def _gpu_cores_from_json(text: str) -> int | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise HardwareError(f"system_profiler output starts like JSON but is not JSON: {error}") from None
    entries = data.get("SPDisplaysDataType") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    for entry in entries:
        cores = entry.get("sppci_cores") if isinstance(entry, dict) else None
        if isinstance(cores, str) and cores.strip().isdigit():
            return int(cores)
        if isinstance(cores, int) and not isinstance(cores, bool):
            return cores
    return None


def _gpu_cores_from_text(text: str) -> int | None:
    lines = text.splitlines()
    # Only the Graphics/Displays section when the text has one: SPHardwareDataType's CPU line
    # reads "Total Number of Cores: 12 (8 performance and 4 efficiency)" too.
    starts = [i for i, line in enumerate(lines) if line.strip() == "Graphics/Displays:"]
    if starts:
        section: list[str] = []
        for line in lines[starts[0] + 1 :]:
            if line and not line[0].isspace() and line.rstrip().endswith(":"):
                break  # the next top-level section
            section.append(line)
        lines = section
    for line in lines:
        key, colon, value = line.partition(":")
        if colon and key.strip() == "Total Number of Cores" and value.strip().isdigit():
            return int(value.strip())
    return None


def parse_gpu_cores(system_profiler_text: str) -> int | None:
    """The GPU core count from ``system_profiler SPDisplaysDataType`` text or its ``-json`` form.

    Text: the "Total Number of Cores: 10" line of the Graphics/Displays section. JSON: the
    first display entry's "sppci_cores" ("10"). None when neither is there (Intel and AMD
    GPUs on Intel Macs have no core count). Raises ``HardwareError`` for malformed JSON.
    """
    stripped = system_profiler_text.lstrip()
    if stripped.startswith("{"):
        return _gpu_cores_from_json(stripped)
    return _gpu_cores_from_text(system_profiler_text)


def probe_apple(run: CommandRunner | None = None) -> AppleProbe:
    """This Mac's chip, core counts, memory and GPU cores, with notes on what is missing.

    Runs ``sysctl -a`` and ``system_profiler SPDisplaysDataType -json`` through ``run``
    (``subprocess.run`` when None). With no ``run`` on a platform other than macOS it runs
    nothing and returns a note; a passed ``run`` stands in for a Mac on any platform, which
    is how recorded dumps are tested. A failing command, a malformed output or an Intel Mac
    is a note, never an exception.
    """
    if run is None:
        # platform.system(), not sys.platform: mypy folds sys.platform checks for the platform it runs on.
        system = platform.system()
        if system != "Darwin":
            return AppleProbe(
                sysctl=None,
                gpu_cores=None,
                notes=(
                    f"not macOS ({system or 'unknown system'}): Apple Silicon probing reads sysctl and system_profiler",
                ),
            )
        run = subprocess.run
    notes: list[str] = []
    stdout, note = run_tool(run, ["sysctl", "-a"], SYSCTL_TIMEOUT_S)
    if stdout is None:
        return AppleProbe(sysctl=None, gpu_cores=None, notes=(note or "sysctl gave no output",))
    try:
        sysctl = parse_sysctl(stdout)
    except HardwareError as error:
        return AppleProbe(sysctl=None, gpu_cores=None, notes=(f"sysctl output could not be read: {error}",))
    if not sysctl.is_apple_silicon:
        notes.append(f"not Apple Silicon ({sysctl.brand or 'no machdep.cpu.brand_string'}): GPU cores not probed")
        return AppleProbe(sysctl=sysctl, gpu_cores=None, notes=tuple(notes))
    if sysctl.performance_cores is None or sysctl.efficiency_cores is None:
        notes.append("sysctl has no hw.perflevel0/1.physicalcpu (macOS 11?): performance/efficiency split unknown")
    if len(sysctl.perf_levels) > 2:
        notes.append(
            f"{len(sysctl.perf_levels)} core types (hw.perflevel0..{len(sysctl.perf_levels) - 1}); see perf_levels"
        )

    gpu_cores: int | None = None
    profile, note = run_tool(run, ["system_profiler", "SPDisplaysDataType", "-json"], SYSTEM_PROFILER_TIMEOUT_S)
    if profile is None:
        notes.append(note or "system_profiler gave no output")
    else:
        try:
            gpu_cores = parse_gpu_cores(profile)
        except HardwareError as error:
            notes.append(f"system_profiler output could not be read: {error}")
        else:
            if gpu_cores is None:
                notes.append("system_profiler SPDisplaysDataType lists no GPU core count (sppci_cores)")
    return AppleProbe(sysctl=sysctl, gpu_cores=gpu_cores, notes=tuple(notes))
