"""Immutable, hashable, JSON-safe attribute mappings for records."""

from __future__ import annotations

import marshal
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from .errors import RecordError

_PLAIN = (type(None), bool, int, str)


def _is_plain_tuple(value: Any) -> bool:
    """A tuple (of tuples) of ints, strings, bools and None: already frozen, nothing to convert."""
    return all(type(v) in _PLAIN or (type(v) is tuple and _is_plain_tuple(v)) for v in value)


def freeze_value(value: Any, where: str) -> Any:
    """Turn a JSON-like value into an immutable one (lists → tuples, dicts → FrozenAttrs)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple and _is_plain_tuple(value):  # fast path: shapes, axes, dimension numbers
        return value
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise RecordError(f"{where}={value!r}: attribute values must be finite numbers")
        return value
    if isinstance(value, (list, tuple)):
        return tuple(freeze_value(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, Mapping):
        return FrozenAttrs(value, where)
    index = getattr(value, "__index__", None)
    if index is not None:  # numpy integers
        return int(index())
    item = getattr(value, "item", None)
    if item is not None:  # numpy scalars
        return freeze_value(item(), where)
    raise RecordError(
        f"{where}={value!r} ({type(value).__name__}): attribute values must be "
        f"None, bool, int, float, str, or lists/dicts of those"
    )


def thaw_value(value: Any) -> Any:
    """The JSON form of a frozen value (tuples → lists, FrozenAttrs → dicts)."""
    if isinstance(value, tuple):
        return [thaw_value(v) for v in value]
    if isinstance(value, FrozenAttrs):
        return {k: thaw_value(v) for k, v in value.items()}
    return value


def _typed(value: Any) -> Any:
    kind = type(value)
    if kind is tuple:
        return (tuple, tuple(_typed(v) for v in value))
    if kind is FrozenAttrs:
        return (FrozenAttrs, value.typed_key())
    return (kind, value)


class FrozenAttrs(Mapping[str, Any]):
    """A read-only mapping with string keys and frozen values; hashable and comparable."""

    __slots__ = ("_data", "_hash", "_typed_key")

    def __init__(self, data: Mapping[str, Any] | None = None, where: str = "attrs") -> None:
        frozen: dict[str, Any] = {}
        if data:
            if not isinstance(data, Mapping):
                raise RecordError(f"{where} must be a mapping of names to values, got {type(data).__name__}")
            for key, value in data.items():
                if not isinstance(key, str):
                    raise RecordError(f"{where} key {key!r} must be a string")
                kind = type(value)
                if kind in _PLAIN or (kind is tuple and _is_plain_tuple(value)):
                    frozen[key] = value  # already immutable: skip building an error label
                else:
                    frozen[key] = freeze_value(value, f"{where}[{key!r}]")
        self._data = frozen
        self._hash: int | None = None
        self._typed_key: bytes | tuple[Any, ...] | None = None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    @classmethod
    def trusted(cls, data: dict[str, Any]) -> FrozenAttrs:
        """Wrap a dict whose keys are strings and values already frozen (no copy, no checks)."""
        made = cls.__new__(cls)
        made._data = data
        made._hash = None
        made._typed_key = None
        return made

    def __len__(self) -> int:
        return len(self._data)

    # Delegated directly to the dict: the Mapping mixins go through __getitem__ and are slow.
    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def items(self) -> ItemsView[str, Any]:
        return self._data.items()

    def values(self) -> ValuesView[Any]:
        return self._data.values()

    def keys(self) -> KeysView[str]:
        return self._data.keys()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(sorted(self._data.items(), key=lambda kv: kv[0])))
        return self._hash

    def typed_key(self) -> bytes | tuple[Any, ...]:
        """A key that tells values apart by type as well as value, for caches.

        ``1 == 1.0 == True`` and they hash alike, so a cache keyed by the mapping itself
        would hand ``groups=1.0`` the cost computed for ``groups=1`` and skip the rule that
        rejects it. marshal (format 2, without back-references) writes a type code before
        every value, recursively, in C; a value it cannot write (a nested FrozenAttrs, a
        subclass of int or str) falls back to pairing each value with its type in Python."""
        if self._typed_key is None:
            try:
                self._typed_key = marshal.dumps(self._data, 2)
            except ValueError:
                self._typed_key = tuple(sorted((k, _typed(v)) for k, v in self._data.items()))
        return self._typed_key

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenAttrs):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._data)

    def to_json(self) -> dict[str, Any]:
        return {k: thaw_value(v) for k, v in self._data.items()}


EMPTY_ATTRS = FrozenAttrs()


def attrs_to_json(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: thaw_value(v) for k, v in value.items()}
