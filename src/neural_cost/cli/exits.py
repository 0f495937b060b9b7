"""A workload that tries to end the process is reported, not obeyed.

``build()`` (or the model it returns) may call ``sys.exit(3)``: a ``SystemExit`` that would
leave the CLI with exit 3 and no message; or ``os._exit(0)``, which ends the process at
once, skipping every handler, so the CLI would exit 0 having printed nothing. While the
workload runs, ``os._exit`` of this process is replaced by a function that raises instead,
and both become a ``NeuralCostError`` naming the call (the CLI prints it and exits 2).

Why not run the workload in a child process instead: ``analyze`` prints as it goes and is
called in-process by tests and scripts; a child per run would add an interpreter start and
a framework import to every call. What interception cannot see: an exit from C code (a C
extension calling ``exit()`` or ``abort()``, a crash), or ``os._exit`` bound by name before
the guard started (a module imported earlier that did ``from os import _exit``). ``compare``
runs each platform in a child and reports one that ends without a report whatever the cause.
A process forked while the guard is on gets the real ``os._exit`` (multiprocessing's forked
workers end through it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import NoReturn

from ..core.errors import NeuralCostError

#: What to do when the function or model (not build()) is what exits.
WORKLOAD_ADVICE = "the function or model returned by build() must return its result, not exit"


class _OsExitCalled(BaseException):
    """Raised in place of ``os._exit``: a BaseException, so ``except Exception`` in the workload lets it through."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def exit_call(code: object) -> str:
    """``sys.exit(3)``, ``sys.exit()``, ``sys.exit('bye')``: the call as the user wrote it."""
    return "sys.exit()" if code is None else f"sys.exit({code!r})"


@contextlib.contextmanager
def exits_reported(who: str, advice: str) -> Iterator[None]:
    """While the block runs, ``sys.exit``/``os._exit`` in it raise ``NeuralCostError``:
    ``"{who} called sys.exit(3), so there is no report; {advice}"``."""
    real_exit = os._exit
    owner = os.getpid()

    def intercepted(status: int) -> NoReturn:
        if os.getpid() != owner:  # a forked child ending normally
            real_exit(status)
        raise _OsExitCalled(status)

    os._exit = intercepted
    try:
        yield
    except SystemExit as error:
        raise NeuralCostError(f"{who} called {exit_call(error.code)}, so there is no report; {advice}") from None
    except _OsExitCalled as error:
        raise NeuralCostError(
            f"{who} called os._exit({error.status}), which would end the process without a report; {advice}"
        ) from None
    finally:
        os._exit = real_exit
