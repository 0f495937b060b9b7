"""Link tables as data: NVLink, PCIe, InfiniBand and Ethernet, read from ``links.toml``.

Every row states a link's bandwidth per device and per direction (what a collective's wire
bytes are scored against, ``costs/collectives.py``), the datasheet's own figure beside it
(an NVLink bidirectional total, a network line rate in Gb/s; the loader checks the two agree)
and its citation. No row states a latency unless a source does; the others are 0 and their
``latency_source`` says so. ``link("nvlink4")`` returns the row as an :class:`Interconnect`;
``gpu_link("h100-sxm")`` the NVLink generation a chips.toml row carries on-package, if any.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import HardwareError
from .interconnect import Interconnect

GIGA = 1e9
MEGA = 1e6  # microseconds per second; dividing by it gives the float nearest 2.5e-6 for 2.5 us (× 1e-6 does not)
_PACKAGED = "neural_cost/hardware/links.toml"
_FIELDS = ("key", "name", "aliases", "bandwidth_gb_s", "bidirectional_gb_s", "line_rate_gbit_s", "latency_us",
           "latency_source", "gpus", "source", "note")  # fmt: skip
# How far a stated figure may sit from the one derived from bandwidth_gb_s (decimal rounding only).
_AGREEMENT = 1e-9


@dataclasses.dataclass(frozen=True, slots=True)
class LinkRow:
    """One kind of link: per-device, per-direction bandwidth (B/s) and where it came from."""

    key: str
    name: str
    aliases: tuple[str, ...]
    bandwidth: float
    bidirectional: float | None
    line_rate_bits: float | None
    latency_seconds: float
    latency_source: str
    gpus: tuple[str, ...]
    source: str
    note: str = ""

    @property
    def stated(self) -> str:
        """The datasheet figure the bandwidth was read from, and how."""
        per_direction = f"{self.bandwidth / GIGA:g} GB/s per direction"
        if self.bidirectional is not None:
            return f"{self.bidirectional / GIGA:g} GB/s bidirectional total per device → {per_direction}"
        if self.line_rate_bits is not None:
            return f"{self.line_rate_bits / GIGA:g} Gb/s per direction → {per_direction}"
        return per_direction

    def interconnect(self) -> Interconnect:
        source = f"table: {self.source}; {self.stated}; {self.latency_source}"
        return Interconnect(self.name, self.bandwidth, self.latency_seconds, source)

    def to_dict(self) -> dict[str, Any]:
        data = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {**data, "aliases": list(self.aliases), "gpus": list(self.gpus), "stated": self.stated}


@dataclasses.dataclass(frozen=True, slots=True)
class LinkTable:
    links: tuple[LinkRow, ...]
    path: str


def _spelling(name: str) -> str:
    """A link name as link() compares it: lower case, letters and digits only."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _positive(raw: dict[str, Any], field: str, where: str, unit: str) -> float:
    value = raw.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise HardwareError(f"{where}: {field} = {value!r} must be a positive number ({unit})")
    return float(value)


def _text(raw: dict[str, Any], field: str, where: str, required: bool = True) -> str:
    value = raw.get(field, None if required else "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise HardwareError(f"{where}: {field} = {value!r} must be a non-empty string")
    return value


def _texts(raw: dict[str, Any], field: str, where: str) -> tuple[str, ...]:
    value = raw.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise HardwareError(f"{where}: {field} = {value!r} must be a list of non-empty strings")
    return tuple(value)


def _agrees(stated: float, derived: float) -> bool:
    return abs(stated - derived) <= _AGREEMENT * derived


def _read_link(raw: Any, where: str) -> LinkRow:
    if not isinstance(raw, dict):
        raise HardwareError(f"{where} must be a table of fields, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise HardwareError(f"{where}: unknown field(s) {', '.join(unknown)}; a row has {', '.join(_FIELDS)}")
    bandwidth = _positive(raw, "bandwidth_gb_s", where, "GB/s per direction") * GIGA
    bidirectional = line_rate = None
    if "bidirectional_gb_s" in raw:
        bidirectional = _positive(raw, "bidirectional_gb_s", where, "GB/s, both directions") * GIGA
        if not _agrees(bidirectional, 2 * bandwidth):
            raise HardwareError(
                f"{where}: bidirectional_gb_s = {raw['bidirectional_gb_s']} is not twice bandwidth_gb_s = "
                f"{raw['bandwidth_gb_s']}; bandwidth_gb_s is per direction, half the bidirectional total"
            )
    if "line_rate_gbit_s" in raw:
        line_rate = _positive(raw, "line_rate_gbit_s", where, "Gb/s per direction") * GIGA
        if not _agrees(line_rate, 8 * bandwidth):
            raise HardwareError(
                f"{where}: line_rate_gbit_s = {raw['line_rate_gbit_s']} is not 8 × bandwidth_gb_s = "
                f"{raw['bandwidth_gb_s']}; bandwidth_gb_s is the line rate in bytes"
            )
    latency = _positive(raw, "latency_us", where, "microseconds") / MEGA if "latency_us" in raw else 0.0
    return LinkRow(
        key=_text(raw, "key", where),
        name=_text(raw, "name", where),
        aliases=_texts(raw, "aliases", where),
        bandwidth=bandwidth,
        bidirectional=bidirectional,
        line_rate_bits=line_rate,
        latency_seconds=latency,
        latency_source=_text(raw, "latency_source", where),
        gpus=_texts(raw, "gpus", where),
        source=_text(raw, "source", where),
        note=_text(raw, "note", where, required=False),
    )


def parse_links(text: str | bytes, path: str) -> LinkTable:
    """Read and check a link table; every problem is a HardwareError naming the file, row and field."""
    try:
        data = tomllib.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HardwareError(f"{path} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"link"})
    if unknown:
        raise HardwareError(f"{path}: unknown table(s) {', '.join(unknown)}; the file holds [[link]] rows")
    rows = data.get("link", [])
    if not isinstance(rows, list) or not rows:
        raise HardwareError(f"{path}: link must be a non-empty array of tables ([[link]] rows)")
    links = []
    for i, raw in enumerate(rows):
        key = f" (key {raw['key']!r})" if isinstance(raw, dict) and isinstance(raw.get("key"), str) else ""
        links.append(_read_link(raw, f"{path}: [[link]] row {i + 1}{key}"))
    table = LinkTable(tuple(links), path)
    _check_unique(table)
    return table


def _check_unique(table: LinkTable) -> None:
    spellings: dict[str, str] = {}
    gpus: dict[str, str] = {}
    for row in table.links:
        for spelled in (row.key, row.name, *row.aliases):
            spelling = _spelling(spelled)
            if not spelling:
                raise HardwareError(f"{table.path}: row {row.key!r} name {spelled!r} has no letters or digits")
            owner = spellings.setdefault(spelling, row.key)
            if owner != row.key:
                raise HardwareError(f"{table.path}: {spelled!r} names both row {owner!r} and row {row.key!r}")
        for gpu in row.gpus:
            owner = gpus.setdefault(gpu, row.key)
            if owner != row.key:
                raise HardwareError(f"{table.path}: GPU {gpu!r} is listed under both {owner!r} and {row.key!r}")


@functools.cache
def _packaged_links() -> LinkTable:
    return parse_links(resources.files("neural_cost.hardware").joinpath("links.toml").read_bytes(), _PACKAGED)


def load_links(path: str | Path | None = None) -> LinkTable:
    """The packaged ``links.toml`` (read once, cached), or the table at ``path`` (read each call)."""
    if path is None:
        return _packaged_links()
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise HardwareError(f"cannot read link table {path}: {exc.strerror or exc}") from None
    return parse_links(text, str(path))


def link_row(name: str, table: LinkTable | None = None) -> LinkRow:
    """The row whose key, name or alias is ``name`` (case, spaces, dashes and dots ignored)."""
    links = (table or load_links()).links
    spelling = _spelling(name) if isinstance(name, str) else ""
    for row in links:
        if spelling and spelling in {_spelling(s) for s in (row.key, row.name, *row.aliases)}:
            return row
    known = ", ".join(f"{row.key!r} ({row.name})" for row in links)
    raise HardwareError(
        f"no link named {name!r} in the link table; known links: {known}. For another link pass "
        f"Interconnect(name, bandwidth=<bytes/s one device sends, per direction>, latency_seconds=..., source=...)"
    )


def link(name: str, table: LinkTable | None = None) -> Interconnect:
    """The link named ``name`` as an Interconnect: ``link("nvlink4")``, ``link("PCIe 5.0 x16")``."""
    return link_row(name, table).interconnect()


def gpu_link(gpu_key: str, table: LinkTable | None = None) -> LinkRow | None:
    """The NVLink row whose chips carry it on-package (a chips.toml [[gpu]] key), or None."""
    return next((row for row in (table or load_links()).links if gpu_key in row.gpus), None)
