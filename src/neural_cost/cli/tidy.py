"""An error as one line a user can act on: no ANSI codes, no framework frames, no ``<locals>``.

A Keras error reaches the CLI as its ``str()``: ``in user code:`` and a dozen frames of
TensorFlow and Keras, then ``Exception encountered when calling Sequential.call().`` with the
message in bold (ANSI codes) and an ``Arguments received by ...`` listing. What the user can
act on is the message and the frames in their own files. ``one_line`` keeps those: the
message's lines joined, and the innermost frames outside installed packages, the Python
library and neural-cost itself, as ``(at model.py:12 in call)``.
"""

from __future__ import annotations

import re
import sys
import sysconfig
import traceback
from pathlib import Path

#: Frames named at most, innermost last.
MAX_FRAMES = 2
#: CSI sequences (colours, bold: ``\x1b[1m``) and the two-byte escapes.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
FRAME = re.compile(r'\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')
# "build.<locals>.f" → "f"; "TorchAdapter.benchmark.<locals>.run" → "run"
LOCALS = re.compile(r"(?:[\w<>]+\.)*<locals>\.")
# lines that frame the message without saying anything: headers and Keras's argument listing
_HEADERS = ("in user code:", "traceback (most recent call last):")
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def _library_roots() -> tuple[Path, ...]:
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    paths = {sysconfig.get_paths().get(name) for name in names}
    return tuple(Path(p).resolve() for p in paths if p)


def is_user_path(path: str) -> bool:
    """A file of the user's: not a frozen or generated module, not installed, not ours."""
    if path.startswith("<") or "site-packages" in path or "dist-packages" in path:
        return False
    if Path(path).name.startswith("__autograph_generated_file"):  # TensorFlow's rewrite of the user's code
        return False
    resolved = Path(path).resolve()
    return not any(resolved.is_relative_to(root) for root in (_PACKAGE_ROOT, *_library_roots()))


def _frame_label(path: str, line: int | str, name: str) -> str:
    return f"{Path(path).name}:{line} in {LOCALS.sub('', name)}"


def _split(text: str) -> tuple[list[str], list[str]]:
    """(message lines, user frames) of an error's text; framework frames and their code lines dropped."""
    message: list[str] = []
    frames: list[str] = []
    frame_indent: int | None = None  # set after a frame line: deeper lines are its code
    listing_indent: int | None = None  # set after "Arguments received by ...:"
    for raw in text.splitlines():
        line = raw.rstrip()
        indent = len(line) - len(line.lstrip())
        if not line.strip():
            frame_indent = listing_indent = None
            continue
        if frame_indent is not None and indent > frame_indent:
            continue
        if listing_indent is not None and indent > listing_indent:
            continue
        frame_indent = listing_indent = None
        match = FRAME.match(line)
        if match:
            frame_indent = indent
            if is_user_path(match["path"]):
                frames.append(_frame_label(match["path"], match["line"], match["name"]))
            continue
        stripped = line.strip()
        header = next((h for h in _HEADERS if stripped.lower().endswith(h)), None)
        if header is not None:  # "...failed (ValueError): in user code:" keeps what comes before
            stripped = stripped[: len(stripped) - len(header)].rstrip()
            if not stripped:
                continue
        if stripped.startswith("Arguments received by ") and stripped.endswith(":"):
            listing_indent = indent
            continue
        message.append(stripped)
    return message, frames


def _join(parts: list[str]) -> str:
    """Lines into one sentence: ``Exception encountered when calling X.call().`` + the message."""
    joined = ""
    for part in parts:
        if not joined:
            joined = part
        elif joined.endswith("."):
            joined = f"{joined[:-1]}: {part}" if joined.endswith(".call().") else f"{joined} {part}"
        elif joined.endswith(":"):
            joined = f"{joined} {part}"
        else:
            joined = f"{joined}; {part}"
    return joined


def _traceback_frames(error: BaseException | None) -> list[str]:
    """The user's frames in the traceback of the exception an error wraps (its ``__cause__`` chain)."""
    frames: list[str] = []
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for summary in traceback.extract_tb(error.__traceback__):
            if is_user_path(summary.filename):
                frames.append(_frame_label(summary.filename, summary.lineno or "?", summary.name))
        error = error.__cause__
    return frames


def one_line(text: str, error: BaseException | None = None) -> str:
    """``text`` (an error's message) as one line: ANSI codes stripped, framework frames left
    out, ``<locals>`` paths removed, and the innermost user frames (from ``text`` itself, or
    from the traceback of ``error`` and what it wraps) named at the end."""
    message, frames = _split(ANSI.sub("", text))
    if not frames:
        frames = _traceback_frames(error.__cause__ if error is not None else None)
    line = _join(message)
    # "(ValueError): ValueError: Exception encountered" → the repeated class name once
    line = re.sub(r"\((\w+)\): \1: ", r"(\1): ", line)
    line = LOCALS.sub("", line)
    unique = list(dict.fromkeys(frames))[-MAX_FRAMES:]
    if unique:
        line += f" (at {', '.join(unique)})"
    return line


def print_error(error: BaseException, *, verbose: bool = False, prefix: str = "neural-cost: error: ") -> None:
    """The error in one line on stderr; with ``verbose``, its whole traceback (and what it wraps) first."""
    if verbose:
        print("".join(traceback.format_exception(error)), end="", file=sys.stderr)
    print(f"{prefix}{one_line(str(error), error)}", file=sys.stderr)
