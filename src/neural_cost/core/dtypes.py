"""Canonical element types: names, widths, and the spellings users and frameworks use.

The core never imports a framework, so framework dtypes are recognised by their
``name`` attribute or their string form (``torch.float32`` → ``float32``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import DTypeError


@dataclass(frozen=True, slots=True)
class DType:
    name: str
    bits: int
    category: str  # "float", "int", "uint", "bool", "complex"

    def nbytes(self, elements: int) -> int:
        """Bytes occupied by ``elements`` values, packed (sub-byte types round up)."""
        return (elements * self.bits + 7) // 8

    @property
    def is_floating(self) -> bool:
        return self.category in ("float", "complex")


_DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("float64", 64, "float"),
        DType("float32", 32, "float"),
        DType("tfloat32", 32, "float"),  # stored as float32; a separate peak on tensor cores
        DType("float16", 16, "float"),
        DType("bfloat16", 16, "float"),
        DType("float8_e4m3fn", 8, "float"),
        DType("float8_e4m3fnuz", 8, "float"),
        DType("float8_e5m2", 8, "float"),
        DType("float8_e5m2fnuz", 8, "float"),
        DType("float4_e2m1fn", 4, "float"),
        DType("complex64", 64, "complex"),
        DType("complex128", 128, "complex"),
        DType("int64", 64, "int"),
        DType("int32", 32, "int"),
        DType("int16", 16, "int"),
        DType("int8", 8, "int"),
        DType("int4", 4, "int"),
        DType("uint64", 64, "uint"),
        DType("uint32", 32, "uint"),
        DType("uint16", 16, "uint"),
        DType("uint8", 8, "uint"),
        DType("uint4", 4, "uint"),
        DType("bool", 8, "bool"),
    )
}

# The seed's positional form passes an itemsize: 2 means float16.
_ITEMSIZE: dict[int, str] = {1: "int8", 2: "float16", 4: "float32", 8: "float64"}

_ALIASES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "fp64": "float64",
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "tf32": "tfloat32",
    "f64": "float64",
    "f32": "float32",
    "f16": "float16",
    "fp8": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "uint8",
    "u32": "uint32",
    "bool_": "bool",
    "pred": "bool",
}


def known_dtypes() -> tuple[str, ...]:
    return tuple(_DTYPES)


def canonical_dtype(value: Any, field: str = "dtype") -> str:
    """Return the canonical name of ``value``: a name, an itemsize, or a framework dtype."""
    if isinstance(value, str):
        if value in _DTYPES:  # fast path: already canonical
            return value
        key = value.strip().lower()
        for prefix in ("torch.", "jnp.", "np.", "numpy.", "tf.", "dtypes."):
            if key.startswith(prefix):
                key = key[len(prefix) :]
        key = _ALIASES.get(key, key)
        if key in _DTYPES:
            return key
        raise DTypeError(
            f"{field}={value!r} is not a known element type; use one of "
            f"{', '.join(_DTYPES)} (or an itemsize 1, 2, 4 or 8)"
        )
    if isinstance(value, bool):
        raise DTypeError(f"{field}={value!r} is not an element type")
    if isinstance(value, int):
        if value in _ITEMSIZE:
            return _ITEMSIZE[value]
        raise DTypeError(
            f"{field}={value!r}: an integer element type must be an itemsize in bytes, "
            f"one of 1 (int8), 2 (float16), 4 (float32), 8 (float64); pass a name such as "
            f"'bfloat16' for anything else"
        )
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return canonical_dtype(name, field)
    if value is not None:
        return canonical_dtype(str(value), field)
    raise DTypeError(f"{field}=None is not an element type")


def dtype_info(name: str) -> DType:
    found = _DTYPES.get(name)
    return found if found is not None else _DTYPES[canonical_dtype(name)]
