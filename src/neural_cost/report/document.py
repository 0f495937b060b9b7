"""From a file to a JSON value, within limits: size, UTF-8, nesting depth.

A saved report is untrusted input. Each step fails with one SchemaError that names the
file and where in it, before any later step can exhaust memory or the interpreter's stack:

- the size is checked before reading (regular files) and while reading (devices, pipes):
  never more than ``max_bytes + 1`` bytes are read, so ``/dev/zero`` fails at once;
- the text must be UTF-8 (the offset of the first invalid byte is named);
- the nesting depth is measured without recursion *before* parsing: ``json.loads`` is
  recursive and raises RecursionError on a 100,000-deep array, and every later step
  (validation, freezing attrs) may then recurse safely.
"""

from __future__ import annotations

import json
import os
import re
import sys
from itertools import accumulate
from typing import Any

from ..core.errors import SchemaError

#: The largest report the benchmarks produce is ``benchmarks/estimate_throughput.py``'s
#: 100,000 operations: 96,991,920 bytes as ``--json`` writes it (indented), 55,257,784
#: compact. The default limit is the larger of 64 MB and 4x that, rounded up: 400 MB.
DEFAULT_MAX_BYTES = 400_000_000
#: A report nests about 9 levels (estimate.by_operation[i].operation.attrs.dimension_numbers
#: [0][0]); 64 leaves room for any attrs a lowering writes and stays far below the stack.
MAX_DEPTH = 64

_CHUNK = 1 << 20
_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\r\n"
# A JSON string (escapes included), so that brackets inside strings are not counted. An
# unterminated one runs to the end of the text: every match attempt at a quote succeeds, so
# the scan is linear (a pattern that could fail there would rescan the rest of the text from
# every later quote, quadratic in a file of escaped quotes).
_STRING_BODY = rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)'
_STRING = re.compile(_STRING_BODY, re.DOTALL)
_STRING_OR_BRACKET = re.compile(_STRING_BODY + rb"|[\[\]{}]", re.DOTALL)
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def check_max_bytes(max_bytes: Any) -> int:
    if max_bytes is None:
        return DEFAULT_MAX_BYTES
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise SchemaError(f"max_bytes={max_bytes!r} must be a positive number of bytes")
    return max_bytes


def read_limited(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The file's bytes, or a SchemaError once it proves larger than ``max_bytes``."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:  # a regular file says its size: refuse before reading
                raise SchemaError(_too_large(path, max_bytes, f"{size:,} bytes, "))
            chunks: list[bytes] = []
            total = 0
            while total <= max_bytes:
                chunk = handle.read(min(_CHUNK, max_bytes + 1 - total))
                if not chunk:
                    break
                if not chunks:
                    _check_start(chunk, path)  # /dev/zero, a binary file: fail on the first chunk
                chunks.append(chunk)
                total += len(chunk)
    except OSError as error:
        raise SchemaError(f"{path}: cannot read ({error.strerror or error})") from error
    if total > max_bytes:
        raise SchemaError(_too_large(path, max_bytes, ""))
    return b"".join(chunks)


def _too_large(path: str | os.PathLike[str], max_bytes: int, size: str) -> str:
    return (
        f"{path}: {size}larger than the {max_bytes:,}-byte limit for a report; if it really is one, "
        f"pass max_bytes= a larger number"
    )


def _check_start(head: bytes, path: str | os.PathLike[str]) -> None:
    start = len(_BOM) if head.startswith(_BOM) else 0
    stripped = head[start:].lstrip(_WHITESPACE)
    if not stripped:
        return  # only whitespace so far: the parser says what is missing
    if stripped[:1] != b"{":
        offset = len(head) - len(stripped)
        shown = chr(stripped[0]) if 0x21 <= stripped[0] < 0x7F else f"byte 0x{stripped[0]:02x}"
        raise SchemaError(
            f"{path}: a report is a JSON object, which starts with '{{'; this file has {shown} at byte offset {offset}"
        )


def parse_document(raw: bytes, path: str | os.PathLike[str]) -> Any:
    """The JSON value in ``raw`` (UTF-8, an optional byte-order mark, at most MAX_DEPTH deep)."""
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.start + 1].hex()
        raise SchemaError(
            f"{path}: not UTF-8: byte 0x{bad} at byte offset {error.start} ({error.reason}); a report is UTF-8 JSON"
        ) from None
    _check_depth(raw, path)
    del raw
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise SchemaError(f"{path}: not JSON ({error})") from None
    except ValueError as error:  # an integer literal beyond the interpreter's digit limit
        raise SchemaError(
            f"{path}: not a report: an integer literal longer than {sys.get_int_max_str_digits()} digits "
            f"({error}); no count in a report comes near that"
        ) from None
    except RecursionError:  # unreachable after the depth check; kept so no RecursionError escapes
        raise SchemaError(f"{path}: nested too deeply to parse") from None


def _check_depth(raw: bytes, path: str | os.PathLike[str]) -> None:
    # Strings are removed first, then everything but brackets: the running sum of +1/-1 over
    # what is left is the nesting depth, computed in C (regex, translate, accumulate).
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    deepest = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if deepest <= MAX_DEPTH:
        return
    depth = 0
    offset = 0
    for match in _STRING_OR_BRACKET.finditer(raw):  # only on failure: find where, for the message
        if match.group()[:1] != b'"':
            depth += _STEP[match.group()[0]]
            if depth > MAX_DEPTH:
                offset = match.start()
                break
    raise SchemaError(
        f"{path}: nested more than {MAX_DEPTH} levels deep (at byte offset {offset}); "
        f"a report nests about 10 levels, so this is not one"
    )
