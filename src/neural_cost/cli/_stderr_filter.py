"""The stderr filter's own process: ``python -I -S _stderr_filter.py`` copies its stdin (the pipe
the CLI's file descriptor 2 writes into) to its stdout (the CLI's original stderr), leaving out
framework log noise, until end of file — which comes when every writer is gone, however the CLI
ended (see ``quiet.filtered_stderr``).

It imports nothing of the package and next to nothing of the standard library, and runs
isolated (``-I -S``): it starts in about 5 ms, where importing ``re``, ``signal`` and ``typing``
would take 10 more, and a run that writes nothing through it (most runs) never compiles its
pattern. A CLI run that ends at once (``kinds``) waits, at its end, for that start; and ``-I``
keeps modules of the user's working directory from shadowing the filter's own.
"""

from __future__ import annotations

# ``signal`` imports ``enum`` (3 ms), ``typing`` imports ``re`` (6 ms): the C module ``_signal`` and
# a TYPE_CHECKING of our own (mypy honours the name) instead
import _signal  # type: ignore[import-not-found]  # no stub; its names are those of ``signal``
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

# C++ log records in absl's format ("I0000 00:00:1796140672.024660   20375 port.cc:153] ...")
# and TensorFlow's older one ("2025-09-17 14:44:05.157831: I external/.../cudart_stub.cc:32] ..."),
# INFO and WARNING only; absl's notice that logging was not initialized; the second line
# of TensorFlow's cpu_feature_guard notice, which absl writes as its own line; and the usage
# trace PyTorch's profiler (Kineto) writes when it starts and stops ("USDT:2026-12-01 18:08:30
# 21121:21121 SyncActivityProfilerHandler.cpp:52] profiler_start").
NOISE_PATTERN = (
    r"[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [^\s:]+:\d+\] "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] [^\s:]+:\d+\] "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"
    r"|To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.$"
    r"|USDT:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ [^\s:]+:\d+\] "
)
#: Signals a terminal or a process-group kill sends to the CLI and its filter alike. The filter
#: outlives them on purpose: it must stay to pass on what the dying CLI wrote last (the end of file
#: that follows the CLI's death ends it), and a Ctrl-C that killed it first would leave the CLI's
#: fd 2 a pipe without a reader (its "interrupted" line lost).
OUTLIVED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGQUIT)
_noise: re.Pattern[str] | None = None


def is_noise(line: str) -> bool:
    """A framework's C++ INFO/WARNING log line (the text of one line, without its newline)."""
    global _noise
    if _noise is None:
        import re  # not at the top: the filter's start, which a quick CLI run waits for, skips it

        _noise = re.compile(NOISE_PATTERN)
    return _noise.match(line.strip()) is not None


def copy_filtered(read_fd: int, write_fd: int) -> None:
    """Copy lines from ``read_fd`` to ``write_fd`` until end of file, leaving out noise; a last
    line without its newline is passed on at the end. It reads to the end even when writing fails
    (stderr closed, `| head` gone): a writer to a full pipe that nobody drains would block."""
    pending = b""
    writable = True

    def write(data: bytes) -> None:
        nonlocal writable
        while writable and data:
            try:
                data = data[os.write(write_fd, data) :]  # a pipe or terminal may take part of it
            except OSError:
                writable = False

    while chunk := os.read(read_fd, 65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        write(b"".join(line + b"\n" for line in lines if not is_noise(line.decode("utf-8", "replace"))))
    if pending and not is_noise(pending.decode("utf-8", "replace")):
        write(pending)


def main() -> None:
    # the CLI starts this process with these signals blocked (no window before this line)
    _signal.pthread_sigmask(_signal.SIG_BLOCK, OUTLIVED)
    for number in OUTLIVED:
        _signal.signal(number, _signal.SIG_IGN)
    copy_filtered(0, 1)  # stdin: the pipe; stdout: the CLI's original stderr
    os._exit(0)  # everything is written (unbuffered): the CLI waits on this exit, so skip the finalization


if __name__ == "__main__":
    main()
