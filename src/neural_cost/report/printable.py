"""Text from a report made safe for a terminal: control characters shown, never obeyed.

A saved report is untrusted: a ``hardware.name`` holding ``\\x1b]0;...\\x07`` or ``\\r`` would
retitle the terminal, recolour it or overwrite the line before it if printed raw. Every
rendered line passes through ``printable``, which spells such characters as escapes.
"""

from __future__ import annotations

import re

# C0 controls and DEL, C1 controls (\x9b is a one-byte CSI), line and paragraph separators,
# bidirectional overrides and isolates (they reorder what is shown), and lone surrogates
# (which a terminal cannot encode).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\r``, ``\\u202e``)."""
    return _UNSAFE.sub(_escape, text)
