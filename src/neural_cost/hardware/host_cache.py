"""The per-machine calibration cache: what this host measured, kept so every run scores alike.

A re-measured bandwidth moves from run to run (43.0 GB/s, then 23.5 GB/s on the same VM),
and a bound that moves with it makes ``diff`` report the probe, not the code. So the host's
figures are measured once, written here, and read by every later run until
``neural-cost hardware --recalibrate`` refreshes them.

One JSON file per machine under ``$NEURAL_COST_CACHE_DIR`` (tests point it at a temporary
directory), else ``$XDG_CACHE_HOME/neural-cost``, else ``~/.cache/neural-cost``. The file is
named by a hash of the machine key: the CPU model string alone can be just "AMD EPYC", so the
key also holds the core counts, every cache level's size and the memory size. The entry is
a dict with one section per kind of figure (``dram``, ``compute``, and ``levels``: each
cache level's measured bandwidth by level name, ``level_probes.py``). Writes are atomic (a temporary file
renamed over the old one); an unreadable or corrupt file is ignored with a note.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cpuinfo import parse_cpuinfo, parse_meminfo_total

ENV_VAR = "NEURAL_COST_CACHE_DIR"
SCHEMA = 1
#: How a cache level's ``levels`` figure was measured (``level_probes.py``): a figure of another
#: revision is not used (``levels.with_measured``) and ``neural-cost hardware --calibrate`` measures
#: it again. 2: a sample's rate is its extra passes' own, not one call's (whose fixed cost had read
#: a VM's L3 at 3.7 GB/s beside main memory's 60).
LEVEL_PROBE_REVISION = 2
_SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


def cache_dir() -> Path:
    """``$NEURAL_COST_CACHE_DIR``, else ``$XDG_CACHE_HOME/neural-cost``, else ``~/.cache/neural-cost``."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "neural-cost"


def today() -> str:
    return datetime.date.today().isoformat()


def read_cache_levels(root: Path = _SYSFS_CACHE) -> tuple[str, ...]:
    """cpu0's caches as ``"L1d 48K"``, ``"L3 32768K"``... sorted; () where sysfs has none."""
    levels = []
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        levels.append(f"L{level}{suffix} {size}")
    return tuple(sorted(levels))


def machine_key(cpuinfo_text: str, cache_levels: tuple[str, ...], meminfo_text: str | None) -> dict[str, Any]:
    """What identifies this machine's figures: model, vendor, cores, sockets, caches, memory."""
    info = parse_cpuinfo(cpuinfo_text)
    return {
        "cpu_model": info.model_name or "unknown",
        "vendor": info.vendor or "unknown",
        "logical_cpus": info.logical_cpus,
        "physical_cores": info.physical_cores,
        "sockets": info.sockets,
        "caches": list(cache_levels),
        "memory_bytes": parse_meminfo_total(meminfo_text) if meminfo_text is not None else None,
    }


def key_digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def cache_path(key: Mapping[str, Any], root: Path | None = None) -> Path:
    return (root or cache_dir()) / f"host-{key_digest(key)}.json"


@dataclass(frozen=True, slots=True)
class CacheRead:
    """An entry (None when absent or unusable) and why it could not be used, if it could not."""

    entry: dict[str, Any] | None
    path: Path
    note: str | None = None


def read_entry(key: Mapping[str, Any], root: Path | None = None) -> CacheRead:
    """This machine's cached entry; a missing file is no entry, a corrupt one is a note."""
    path = cache_path(key, root)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return CacheRead(None, path)
    except OSError as error:
        return CacheRead(None, path, f"calibration cache {path} unreadable ({error.strerror}); measured afresh")
    try:
        entry = json.loads(text)
    except ValueError:
        return CacheRead(None, path, f"calibration cache {path} is not JSON; ignored and measured afresh")
    problem = _entry_problem(entry, key)
    if problem:
        return CacheRead(None, path, f"calibration cache {path} ignored ({problem}); measured afresh")
    return CacheRead(entry, path)


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value < float("inf")


def _entry_problem(entry: Any, key: Mapping[str, Any]) -> str | None:
    if not isinstance(entry, dict) or entry.get("schema") != SCHEMA:
        return f"not a schema-{SCHEMA} entry"
    if entry.get("key") != dict(key):
        return "written for another machine"
    dram = entry.get("dram")
    if dram is not None and not (
        isinstance(dram, dict) and _positive(dram.get("bytes_per_second")) and isinstance(dram.get("date"), str)
    ):
        return "its dram section has no positive bytes_per_second and date"
    compute = entry.get("compute")
    if compute is not None:
        if not isinstance(compute, dict):
            return "its compute section is not an object"
        for dtype, figure in compute.items():
            if not (isinstance(figure, dict) and _positive(figure.get("flops_per_second"))):
                return f"compute[{dtype!r}] has no positive flops_per_second"
            if not isinstance(figure.get("kernel"), str) or not isinstance(figure.get("date"), str):
                return f"compute[{dtype!r}] names no kernel and date"
    if entry.get("levels") is not None:
        return check_section(entry["levels"])
    return None


def write_entry(key: Mapping[str, Any], sections: Mapping[str, Any], root: Path | None = None) -> Path:
    """Merge ``sections`` (``{"dram": {...}}``, ``{"compute": {...}}``) into this machine's entry,
    written atomically: a reader sees the old file or the new one, never half of either."""
    path = cache_path(key, root)
    current = read_entry(key, root).entry or {"schema": SCHEMA, "key": dict(key)}
    current.update(sections)
    return write_json(path, current)


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as JSON atomically: a reader sees the old file or the new one (the machine
    cache, kernel calibrations and their history all go through here)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump(data, stream, indent=1, sort_keys=True)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def forget_entry(key: Mapping[str, Any], root: Path | None = None) -> None:
    """Drop this machine's entry (``--recalibrate``), so the next read measures afresh."""
    cache_path(key, root).unlink(missing_ok=True)


def check_section(section: Any) -> str | None:
    """Why a cached ``levels`` section is unusable, or None."""
    if not isinstance(section, Mapping):
        return "its levels section is not an object"
    for name, figure in section.items():
        if not isinstance(figure, Mapping):
            return f"levels[{name!r}] is not an object"
        for key, least in (("bytes_per_second", "positive"), ("spread", "non-negative")):
            value = figure.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                return f"levels[{name!r}] has no {least} {key}"
        for key in ("threads", "samples", "bytes_per_thread", "capacity_bytes"):
            if type(figure.get(key)) is not int:
                return f"levels[{name!r}] has no integer {key}"
        if not all(isinstance(figure.get(key), str) for key in ("pattern", "method", "date")):
            return f"levels[{name!r}] names no pattern, method and date"
        if not figure["bytes_per_second"] > 0:
            return f"levels[{name!r}] has no positive bytes_per_second"
    return None
