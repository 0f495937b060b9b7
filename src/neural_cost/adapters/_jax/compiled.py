"""The executables ``JaxAdapter`` compiled, kept so a program is compiled once.

``JaxAdapter.benchmark`` compiles the program it times; ``trace`` reads XLA's
``cost_analysis()`` (the cross-check) from that same executable instead of compiling a
second time. Compiling is the expensive step: a 12,000-equation unrolled program takes
longer to compile than to trace and walk by two orders of magnitude, so a second compile
doubles the cost of an analysis for a figure that is only shown beside ours.

An executable is found by the function (the same object, or an equal bound method) and by
the abstract signature of its arguments: the pytree structure, each array leaf's shape,
dtype and weak type, each other leaf's type, and the static arguments' values — what
``jax.jit`` itself specializes on. The last few are kept (``CACHE_SIZE``); each holds the
compiled program and the function (with what it closes over), never the arguments.

``CompileLog`` counts XLA backend compilations through ``jax.monitoring`` (tests and
``benchmarks/jax_compile_count.py`` use it).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jax

XLA_SOURCE = "XLA cost_analysis"
CROSS_CHECK_NOTE = (
    "XLA counts each loop body once, bytes after fusion, and only unpadded convolution taps; "
    "neural-cost counts every iteration, unfused traffic, and full kernels"
)
#: jax's event for one XLA backend compilation; its ``fun_name`` keyword is ``jit(<name>)``.
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: Executables kept per adapter: a Pipeline times and then traces each stage in turn, so a
#: handful covers it without holding every program a long session ever compiled.
CACHE_SIZE = 4


def parse_cost_analysis(analysis: Any) -> dict[str, Any]:
    """XLA's ``cost_analysis()`` as plain figures: a dict, or (older JAX) a list of dicts;
    ``-1`` means unknown to XLA and becomes None, never a count."""
    if isinstance(analysis, (list, tuple)):
        analysis = analysis[0] if analysis else None
    if not isinstance(analysis, Mapping):
        return {"source": XLA_SOURCE, "error": f"cost_analysis() returned {type(analysis).__name__}, not figures"}
    figures: dict[str, Any] = {"source": XLA_SOURCE, "note": CROSS_CHECK_NOTE}
    for ours, theirs in (("flops", "flops"), ("bytes", "bytes accessed"), ("transcendentals", "transcendentals")):
        value = analysis.get(theirs)
        figures[ours] = float(value) if isinstance(value, (int, float)) and value >= 0 else None
    return figures


def failed_cross_check(error: BaseException) -> dict[str, Any]:
    """The cross-check entry when XLA could not give its figures: said, never a failed trace."""
    return {"source": XLA_SOURCE, "error": f"{type(error).__name__}: {error}"[:300]}


def signature(args: tuple[Any, ...], kwargs: Mapping[str, Any], static: tuple[int, ...]) -> Hashable | None:
    """What ``jax.jit`` specializes a program on, as a hashable key; None when a static
    argument is unhashable (jit would refuse it too)."""
    dynamic = tuple(a for i, a in enumerate(args) if i not in static)
    statics = tuple(args[i] for i in static if i < len(args))
    try:
        hash(statics)
    except TypeError:
        return None
    leaves, treedef = jax.tree_util.tree_flatten((dynamic, dict(kwargs)))
    return treedef, tuple(_leaf_key(leaf) for leaf in leaves), statics


def _leaf_key(leaf: Any) -> Hashable:
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is not None and dtype is not None:
        return "array", tuple(int(d) for d in shape), str(dtype), bool(getattr(leaf, "weak_type", False))
    return "value", type(leaf).__qualname__  # a Python scalar is traced by its type, not its value


@dataclass
class Executable:
    """One compiled program, its compile time, and XLA's figures read from it (once)."""

    fn: Any
    key: Hashable
    compiled: Any
    compile_seconds: float
    _figures: dict[str, Any] | None = field(default=None, repr=False)

    def cross_check(self) -> dict[str, Any]:
        """XLA's ``cost_analysis()`` of this very executable, as ``parse_cost_analysis`` gives it."""
        if self._figures is None:
            try:
                self._figures = parse_cost_analysis(self.compiled.cost_analysis())
            except Exception as error:  # analysis unavailable on this backend: said in the report
                self._figures = failed_cross_check(error)
        return dict(self._figures)


class Executables:
    """The last ``CACHE_SIZE`` programs an adapter compiled (more inside ``keeping``), most recent last."""

    def __init__(self) -> None:
        self._entries: list[Executable] = []
        self._size = CACHE_SIZE

    @contextmanager
    def keeping(self, count: int) -> Iterator[None]:
        """Keep at least ``count`` executables inside the block (a kernel calibration's passes go
        round hundreds of programs: with four kept, each compiled again every pass, 20–30% of a
        JAX calibration's time); back to ``CACHE_SIZE`` after it, the most recent kept."""
        size = self._size
        self._size = max(size, count)
        try:
            yield
        finally:
            self._size = size
            self._entries = self._entries[-size:]

    def find(
        self, fn: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], static: tuple[int, ...]
    ) -> Executable | None:
        """The executable compiled for ``fn`` on arguments of this signature, or None."""
        key = signature(args, kwargs, static)
        if key is None:
            return None
        for entry in reversed(self._entries):
            if _same_function(entry.fn, fn) and entry.key == key:
                return entry
        return None

    def compile(self, fn: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], static: tuple[int, ...]) -> Executable:
        """The executable for ``fn`` on these arguments: the one kept, else compiled now (and
        kept). A compilation error propagates to the caller."""
        found = self.find(fn, args, kwargs, static)
        if found is not None:
            return found
        start = time.perf_counter()
        compiled = jax.jit(fn, static_argnums=static).lower(*args, **kwargs).compile()
        entry = Executable(fn, signature(args, kwargs, static), compiled, time.perf_counter() - start)
        if entry.key is not None:
            self._entries = [*self._entries[-(self._size - 1) :], entry]
        return entry


def _same_function(kept: Any, fn: Any) -> bool:
    if kept is fn:
        return True
    try:  # ``model.apply`` is a new bound-method object at every access, equal to the last one
        return bool(kept == fn)
    except Exception:
        return False


@dataclass
class CompileLog:
    """XLA backend compilations seen while the log was open: ``(fun_name, seconds)`` each."""

    events: list[tuple[str, float]] = field(default_factory=list)

    def of(self, name: str) -> list[float]:
        """The compile times of the program jax names ``jit(name)`` (a function's ``__name__``)."""
        return [seconds for fun_name, seconds in self.events if fun_name == f"jit({name})"]


@contextmanager
def compile_log() -> Iterator[CompileLog]:
    """Record every XLA backend compilation inside the ``with`` block, through ``jax.monitoring``."""
    log = CompileLog()

    def listen(event: str, duration_secs: float, **metadata: str | int) -> None:
        if event == BACKEND_COMPILE_EVENT:
            log.events.append((str(metadata.get("fun_name", "")), float(duration_secs)))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield log
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
