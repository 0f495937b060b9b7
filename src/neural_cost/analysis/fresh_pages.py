"""Results an eager framework writes on pages the OS maps anew: what the expected time adds.

An eager PyTorch program allocates every result with ``posix_memalign``. glibc serves a request
from its heap when a free chunk or the heap's top fits it, and maps fresh pages otherwise
(``mmap``, or growing the heap); the first write to each fresh 4 KiB page faults, about a
microsecond a page on the machines measured, which the micro-benchmarks (warm buffers) never pay.

Two parts, as measured here (glibc 2.36, minor page faults per run of the same program):

- **Always**: a request of at least 32 MiB (``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit) is mapped
  anew every time: glibc raises its dynamic mmap threshold only up to that size, so such a chunk
  is never kept for reuse (a 32 MiB tensor written and freed in a loop faults its 8,193 pages on
  every run; a GPT-2-style model at batch 16 faults its 67 MB of logits, 16,384 pages, on every
  forward, and little else). This part is in the expected time. (Not quite always: glibc maps
  only when its heap's top cannot serve the request, and a top that earlier work left large —
  under the trim threshold, twice the mmap threshold — serves it on warm pages: in the test
  suite's long-lived process a 40 MiB tensor faulted 3,313 of its 10,240 pages a run.)
- **Sometimes**: every smaller result of at least 128 KiB (glibc's initial mmap threshold) may
  land on fresh pages or on reused ones, depending on the heap's state, which differs from one
  process to the next (the same ResNet-style forward at batch 16 faulted 16.6 MB per run in one
  process and nothing in another). The expected time's upper end counts them all.

With glibc's thresholds set in the environment (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_``, or their
``GLIBC_TUNABLES`` names ``glibc.malloc.*``) the dynamic threshold is off and the allocator is
predictable (``glibc_allocator``), as measured here (glibc 2.36; results of 1, 8 and 40 MiB
written and freed in a loop, faults per iteration of their 12,544 pages):

- ``MALLOC_MMAP_MAX_=0`` with a ``MALLOC_TRIM_THRESHOLD_`` above what a run frees: nothing is
  mapped, nothing returned — 0 faults: no fresh pages, and the upper end is the point;
- any variable set without ``MALLOC_MMAP_MAX_=0``: every result of at least
  ``MALLOC_MMAP_THRESHOLD_`` (128 KiB when unset: ``MALLOC_TRIM_THRESHOLD_`` alone gave 12,547
  faults, every result) is mapped anew each run — in the expected time;
- a trim threshold not set above what a run frees: smaller results may land on trimmed pages
  (``MALLOC_MMAP_MAX_=0`` alone: 2,045 faults) — the upper end.

A threshold above 32 MiB (glibc 2.36 honours one; versions differ), a preloaded jemalloc or
tcmalloc, or another C library: nothing predicted, a note says so and only the range remains.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.estimate import CostEstimate
from ..core.units import format_seconds, format_si

#: glibc's initial mmap threshold: a result at least this large may be handed out on fresh pages.
FRESH_THRESHOLD_BYTES = 128 * 1024
#: glibc's largest dynamic mmap threshold on 64-bit (``4·1024·1024·sizeof(long)``): a result at
#: least this large is mapped anew on every run.
ALWAYS_MAPPED_BYTES = 32 * 1024 * 1024
#: glibc's default trim threshold (bytes freed at the heap's top beyond it go back to the system).
_DEFAULT_TRIM_BYTES = 128 * 1024
#: Environment variables and their GLIBC_TUNABLES names: setting any turns the dynamic threshold off.
_VARIABLES = {
    "MALLOC_MMAP_THRESHOLD_": "glibc.malloc.mmap_threshold",
    "MALLOC_TRIM_THRESHOLD_": "glibc.malloc.trim_threshold",
    "MALLOC_TOP_PAD_": "glibc.malloc.top_pad",
    "MALLOC_MMAP_MAX_": "glibc.malloc.mmap_max",
}
_PRELOADED = ("jemalloc", "tcmalloc", "mimalloc")
#: What keeps every page of a steady loop mapped (the ``page_faults`` finding gives it).
KEEP_PAGES = "MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184"


@dataclass(frozen=True, slots=True)
class Allocator:
    """What glibc does with a program's results in this process, read from its environment.
    ``mapped_from``: results at least this large are mapped anew on every run (None: none is);
    ``trim_bytes``: freed memory at the heap's top beyond this goes back to the system (None:
    glibc's dynamic default, whose state is the process's history); ``caveat``: why nothing can
    be predicted (then both are None)."""

    mapped_from: int | None
    trim_bytes: int | None
    settings: str = "glibc defaults"
    caveat: str | None = None

    def __post_init__(self) -> None:
        if self.caveat is not None and (self.mapped_from is not None or self.trim_bytes is not None):
            raise ValueError("an allocator that cannot be predicted has no mmap or trim threshold")

    def keeps(self, freed_bytes: int) -> bool:
        """Whether a run freeing ``freed_bytes`` of heap leaves every page mapped: the trim
        threshold is set and at least that large (then no result below ``mapped_from`` faults)."""
        return self.trim_bytes is not None and self.trim_bytes >= freed_bytes


def measured_fault_seconds(figures: Mapping[str, Any], cost: float | None) -> float | None:
    """What a measurement's page faults (``Measurement.allocator``: faults per timed run and the
    page size) cost at ``cost`` seconds a byte; None without either."""
    faults, page = figures.get("minor_page_faults_per_run"), figures.get("page_bytes")
    if faults is None or not page or not cost:
        return None
    return float(faults) * float(page) * cost


_SIZE_MAX = 2**64 - 1
_NUMBER = re.compile(r"-?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def _number(text: str) -> int | None:
    """A setting as glibc's ``strtoul`` with base 0 reads a whole one (``0x`` hex, a leading 0
    octal, a minus sign wrapping round: ``-1`` is SIZE_MAX, "never trim"), or None for anything
    else (``16G``, ``1_000``: how glibc takes those is not modeled)."""
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    negative, digits = text.startswith("-"), text.lstrip("-")
    value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") else int(digits)
    return (_SIZE_MAX + 1 - value) % (_SIZE_MAX + 1) if negative else min(value, _SIZE_MAX)


def _tunables(env: Mapping[str, str]) -> dict[str, str]:
    """``GLIBC_TUNABLES``' entries, a later one overriding an earlier one."""
    found: dict[str, str] = {}
    for part in env.get("GLIBC_TUNABLES", "").split(":"):
        name, _, value = part.partition("=")
        if name and value:
            found[name.strip()] = value
    return found


def start_environment() -> Mapping[str, str]:
    """The environment this process started with, which is what glibc read (``/proc/self/environ``;
    ``os.environ`` where there is none): a ``MALLOC_*_`` set in ``os.environ`` later changes nothing."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return os.environ
    pairs = (entry.decode(errors="replace").partition("=") for entry in raw.split(b"\0") if entry)
    return {name: value for name, _, value in pairs}


def glibc_allocator(environ: Mapping[str, str] | None = None) -> Allocator:
    """This process's allocator as far as fresh pages go (the module docstring). ``environ``:
    the environment the process started with (glibc reads it then): ``start_environment()`` by
    default."""
    env = start_environment() if environ is None else environ
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return Allocator(None, None, "", "the C library is not glibc")
    preloaded = [name for name in _PRELOADED if name in env.get("LD_PRELOAD", "")]
    if preloaded:
        return Allocator(None, None, "", f"{preloaded[0]} is preloaded (LD_PRELOAD)")
    tunables = _tunables(env)
    if _number(tunables.get("glibc.malloc.hugetlb", "0")) != 0:
        return Allocator(None, None, "", "glibc.malloc.hugetlb is set (huge pages fault once for 2 MiB or more)")
    given: dict[str, str] = {}
    for variable, tunable in _VARIABLES.items():
        both = [value for value in (env.get(variable), tunables.get(tunable)) if value is not None]
        if len(both) == 2 and both[0] != both[1]:
            return Allocator(None, None, "", f"{variable} and {tunable} are both set (which one wins is not modeled)")
        if both:
            given[variable] = both[0]
    if not given:
        return Allocator(ALWAYS_MAPPED_BYTES, None)
    settings = " ".join(f"{variable}={value}" for variable, value in given.items())
    values: dict[str, int] = {}
    for variable, value in given.items():
        number = _number(value)
        if number is None:
            return Allocator(None, None, settings, f"{variable}={value!r} is not a plain number (not modeled)")
        values[variable] = number
    threshold = values.get("MALLOC_MMAP_THRESHOLD_", FRESH_THRESHOLD_BYTES)
    if threshold > ALWAYS_MAPPED_BYTES and values.get("MALLOC_MMAP_MAX_", 1) != 0:
        return Allocator(None, None, settings, "an mmap threshold above 32 MiB (glibc versions differ on honouring it)")
    mapped_from = None if values.get("MALLOC_MMAP_MAX_", 1) == 0 else threshold
    return Allocator(mapped_from, values.get("MALLOC_TRIM_THRESHOLD_", _DEFAULT_TRIM_BYTES), settings)


def large_result_bytes(estimate: CostEstimate, operations: tuple[int, ...], at_least: int) -> int:
    """Bytes of the results of ``operations`` (record indices) of at least ``at_least`` bytes each,
    over all their executions. The records do not say which results are written in place: pass
    the allocated ones (``expected.allocated_records``)."""
    total = 0
    for i in operations:
        operation = estimate.by_operation[i].operation
        if operation.output_bytes >= at_least:
            total += operation.output_bytes * operation.count
    return total


def binary_size(size: int) -> str:
    """``33554432`` → ``32 MiB``, ``131072`` → ``128 KiB``; other sizes in decimal units."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return format_si(size, "B")


def mapped_note(allocator: Allocator, fresh_bytes: int, seconds: float, *, kept: bool) -> list[str]:
    """The expected line's notes on fresh pages: what the expected time counts, and why."""
    if allocator.caveat is not None:
        return [f"fresh pages not predicted ({allocator.caveat}): only the range's upper end counts them"]
    notes = []
    if fresh_bytes and allocator.mapped_from is not None:
        at_least = binary_size(allocator.mapped_from)
        why = "never kept for reuse" if allocator.settings == "glibc defaults" else allocator.settings
        notes.append(
            f"fresh pages: {format_si(fresh_bytes, 'B')} of results of ≥ {at_least} each are mapped anew on every "
            f"run by glibc ({why}): {format_seconds(seconds)} of first-touch page faults in the expected time"
        )
    if kept and allocator.mapped_from is None:
        notes.append(f"allocator keeps its pages ({allocator.settings}): the range's upper end is the expected time")
    elif kept:
        notes.append(
            f"results below {binary_size(allocator.mapped_from or 0)} stay on reused heap pages (trim threshold "
            f"{binary_size(allocator.trim_bytes or 0)}): the range's upper end is the expected time"
        )
    return notes
