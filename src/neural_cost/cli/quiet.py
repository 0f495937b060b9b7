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
  program writes pass through, in order.

A filter must never lose a real error, however the process ends, so it runs in a process of
its own (``_stderr_filter.py``), never in a thread of the CLI: fd 2 becomes a pipe's write end,
the filter reads the pipe and writes to the original stderr. A C++ ``Check failed`` then
``abort()``, a segmentation fault, ``os._exit`` or a kill leave what is still in the pipe to the
filter, which reads it to the end of file that the writer's death brings, passes it on and
exits; a thread would die with the process, the pipe's content with it (4 runs in 15 lost the
fatal message). On a normal exit (a return, ``sys.exit``, an exception) fd 2 is restored and
the CLI waits for the filter to finish, so its last lines come before the shell's prompt and
the filter is reaped; a filter that outlives a crashed CLI is reaped by init once it has
passed everything on. The filter ignores the signals a terminal or a process-group kill sends
(Ctrl-C): it stays while anything can still write to the pipe, and the end of file ends it.
It starts isolated and imports next to nothing (5 ms); the CLI does not wait for it to
start (the pipe holds what comes first): entering costs the CLI a fork and an exec (0.3 ms),
and only a run shorter than the filter's start (``kinds``) waits, at its end, for the rest.

Nothing here changes what runs: oneDNN stays as the framework configured it (its numerics
are what the user gets), only its message is hidden.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import TextIO

from . import _stderr_filter
from ._stderr_filter import is_noise

__all__ = ["FRAMEWORK_PACKAGES", "filtered_stderr", "is_noise", "quiet_frameworks"]

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

#: Streams ``filtered_stderr`` gave ``sys.stderr``: referenced, so never closed behind a handler's back.
_kept_open: list[TextIO] = []
#: Seconds to wait, on leaving ``filtered_stderr``, for the filter to exit. It outlives the wait only
#: while a process the workload started still holds the pipe: it stays to pass that output on.
_DRAIN_SECONDS = 1.0


def quiet_frameworks() -> None:
    """Set the environment, warning filters and logger levels that keep frameworks quiet.
    Call it before any framework is imported; what it sets lasts for the process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    packages = "|".join(re.escape(package) for package in FRAMEWORK_PACKAGES)
    warnings.filterwarnings("ignore", module=rf"({packages})(\.|$)")
    for package in FRAMEWORK_PACKAGES:
        logging.getLogger(package).setLevel(logging.ERROR)


def _owns_fd2(stream: TextIO) -> bool:
    """True when ``stream`` is this process's real stderr (not pytest's capture, not a StringIO)."""
    if os.name != "posix" or stream is not sys.__stderr__:
        return False
    try:
        return stream.fileno() == 2
    except (OSError, ValueError):
        return False


def _start_filter(read_fd: int, write_fd: int) -> subprocess.Popen[bytes]:
    """The filter's process, reading ``read_fd`` and writing to ``write_fd``. It starts with the
    signals it outlives blocked, so none can end it before it ignores them; ``close_fds`` keeps
    every other descriptor out of it (a pipe's write end held there would never see its end)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _stderr_filter.OUTLIVED)
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", _stderr_filter.__file__],
            stdin=read_fd,
            stdout=write_fd,
            stderr=write_fd,
            close_fds=True,
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _exited_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether ``process`` exits within ``seconds`` (then reaped). A pidfd wakes this the moment it
    exits, where ``Popen.wait``'s timeout polls in growing sleeps (milliseconds on every run)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        exited, _, _ = select.select([pidfd], [], [], seconds)
    finally:
        os.close(pidfd)
    if exited:
        process.wait()
    return bool(exited)


def _wait_for(process: subprocess.Popen[bytes]) -> None:
    """Wait for the filter to pass on the last lines and exit; say so if it failed."""
    if not _exited_within(process, _DRAIN_SECONDS):
        # a process the workload started still holds the pipe: the filter serves it, and is reaped after
        threading.Thread(target=process.wait, name="neural-cost-stderr-reaper", daemon=True).start()
        return
    code = process.returncode
    if code != 0:
        print(
            f"neural-cost: the stderr filter ended with status {code}; C/C++ output may be missing"
            " (--verbose runs without it)",
            file=sys.stderr,
        )


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
    """While the block runs, what C and C++ code write to file descriptor 2 passes through a
    filter process that drops framework log noise (``is_noise``); Python's ``sys.stderr`` writes
    straight to the original stderr, so it stays a terminal when it was one (the progress
    line) and its order is kept. A no-op unless ``sys.stderr`` is the process's own stderr, or
    when the filter cannot be started (then nothing is filtered, nothing lost)."""
    # a package run from a zip has no file to start the filter from: nothing filtered, nothing lost
    if not _owns_fd2(sys.stderr) or not os.path.isfile(_stderr_filter.__file__):
        yield
        return
    python_stderr = sys.stderr
    python_stderr.flush()
    original = os.dup(2)
    read_fd, write_fd = os.pipe()
    try:
        process = _start_filter(read_fd, original)
    except OSError:  # no interpreter to run it (an embedded Python), no process left
        process = None
    os.close(read_fd)  # the filter's now: its end of file must not wait for this process's copy
    if process is None:
        for fd in (write_fd, original):
            os.close(fd)
        yield
        return
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
        os.dup2(original, 2)  # closes the pipe's last write end in this process: the filter reaches its end
        os.close(original)
        _wait_for(process)
