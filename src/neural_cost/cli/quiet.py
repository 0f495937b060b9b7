"""Framework log noise kept off the user's terminal unless ``--verbose``.

TensorFlow, JAX and their C++ libraries log on every run: TensorFlow's
``oneDNN custom operations are on...`` (an INFO line) and absl's ``WARNING: All log messages
before absl::InitializeLog() is called are written to STDERR``; XLA's backend notices;
Python warnings and ``logging`` records of the frameworks. Three layers silence them:

- the environment, set before any framework is imported (the CLI imports them lazily, and
  ``compare``'s children inherit it): ``TF_CPP_MIN_LOG_LEVEL=2`` hides TensorFlow's C++
  INFO and WARNING lines that go through its own logger — unless the user set it;
- Python ``warnings`` raised inside framework packages, and the frameworks' ``logging``
  loggers below ERROR;
- file descriptor 2 (``filtered_stderr``): some C++ lines are written by absl directly,
  during the framework's import, before anything reads ``TF_CPP_MIN_LOG_LEVEL`` (TensorFlow
  2.16 and later print the oneDNN line whatever it says). Only the C++ log format's INFO and
  WARNING records are dropped; errors (``E…``/``F…`` records) and anything else the
  program writes pass through.

Nothing here changes what runs: oneDNN stays as the framework configured it (its numerics
are what the user gets), only its message is hidden.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import TextIO

#: Packages whose warnings and log records are noise to a neural-cost user.
FRAMEWORK_PACKAGES = (
    "tensorflow",
    "tf_keras",
    "keras",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "equinox",
    "torch",
    "absl",
    "h5py",
    "google.protobuf",
)

# C++ log records in absl's format ("I0000 00:00:1796140672.024660   20375 port.cc:153] ...")
# and TensorFlow's older one ("2025-09-17 14:44:05.157831: I external/.../cudart_stub.cc:32] ..."),
# INFO and WARNING only; absl's notice that logging was not initialized; and the second line
# of TensorFlow's cpu_feature_guard notice, which absl writes as its own line.
NOISE = re.compile(
    r"[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [^\s:]+:\d+\] "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] [^\s:]+:\d+\] "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"
    r"|To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.$"
)
#: Streams ``filtered_stderr`` gave ``sys.stderr``: referenced, so never closed behind a handler's back.
_kept_open: list[TextIO] = []
#: Seconds to wait, on leaving ``filtered_stderr``, for a process the workload started that still holds fd 2.
_DRAIN_SECONDS = 1.0


def quiet_frameworks() -> None:
    """Set the environment, warning filters and logger levels that keep frameworks quiet.
    Call it before any framework is imported; what it sets lasts for the process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    packages = "|".join(re.escape(package) for package in FRAMEWORK_PACKAGES)
    warnings.filterwarnings("ignore", module=rf"({packages})(\.|$)")
    for package in FRAMEWORK_PACKAGES:
        logging.getLogger(package).setLevel(logging.ERROR)


def is_noise(line: str) -> bool:
    """A framework's C++ INFO/WARNING log line (the text of one line, without its newline)."""
    return NOISE.match(line.strip()) is not None


def _owns_fd2(stream: TextIO) -> bool:
    """True when ``stream`` is this process's real stderr (not pytest's capture, not a StringIO)."""
    if os.name != "posix" or stream is not sys.__stderr__:
        return False
    try:
        return stream.fileno() == 2
    except (OSError, ValueError):
        return False


def _copy_filtered(read_fd: int, write_fd: int) -> None:
    """Copy lines from ``read_fd`` to ``write_fd`` until end of file, leaving out noise. It
    reads to the end even when writing fails (stderr closed, `| head` gone): a writer to a
    full pipe that nobody drains would block the program."""
    pending = b""
    writable = True

    def write(data: bytes) -> None:
        nonlocal writable
        if writable and data:
            try:
                os.write(write_fd, data)
            except OSError:
                writable = False

    with open(read_fd, "rb", buffering=0, closefd=True) as source:
        while chunk := source.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            write(b"".join(line + b"\n" for line in lines if not is_noise(line.decode("utf-8", "replace"))))
    if not is_noise(pending.decode("utf-8", "replace")):
        write(pending)


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
    """While the block runs, what C and C++ code write to file descriptor 2 passes through a
    filter that drops framework log noise (``is_noise``); Python's ``sys.stderr`` writes
    straight to the original stderr, so it stays a terminal when it was one (the progress
    line) and its order is kept. A no-op unless ``sys.stderr`` is the process's own stderr."""
    if not _owns_fd2(sys.stderr):
        yield
        return
    python_stderr = sys.stderr
    python_stderr.flush()
    original = os.dup(2)
    read_fd, write_fd = os.pipe()
    copier = threading.Thread(target=_copy_filtered, args=(read_fd, original), name="neural-cost-stderr", daemon=True)
    copier.start()
    os.dup2(write_fd, 2)
    os.close(write_fd)
    direct = open(  # noqa: SIM115 - kept open for the process's lifetime, see below
        os.dup(original), "w", encoding=python_stderr.encoding, errors="backslashreplace", buffering=1
    )
    sys.stderr = direct
    _kept_open.append(direct)
    try:
        yield
    finally:
        sys.stderr = python_stderr
        direct.flush()  # left open: a logging handler made in the block may still hold it
        os.dup2(original, 2)  # closes the pipe's last write end in this process: the copier reaches its end
        copier.join(_DRAIN_SECONDS)
        if not copier.is_alive():  # else a child the workload started still writes through it
            os.close(original)
