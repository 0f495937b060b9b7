"""The dispatch-mode recorder: every aten call a PyTorch program runs, lowered as it runs.

``Recorder`` is a ``TorchDispatchMode``: each aten call runs, then goes through the shared
lowering driver (``adapters._walk.lower``) with the aten table, so the tally follows the one
policy every adapter follows. A composite op that reaches the mode whole (under
``inference_mode``) and has no table entry runs as its decomposition, so its parts are
counted, once. The recorder also notes which buffers each call reads and allocates (the
dataflow the memory profile's liveness walk reads) and, for each call that does work, the
records it lowered to and the bytes its tensors hold: its kernel (``kernels.py``). Module
scopes come from forward hooks.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ...core.attrs import FrozenAttrs
from ...core.records import Operation
from .._walk import WalkState, lower
from .kernels import KernelLog
from .recompute import mark_recomputed, recomputing
from .table import REGISTRY, TABLE, AtenCall, TorchContext
from .values import TinyValues

if TYPE_CHECKING:
    from .preserve import WriteGuard

PROFILER_REASON = "a profiler marker: no data is read or written"


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from tensors_in(item)
    elif hasattr(value, "__dataclass_fields__") or hasattr(value, "to_tuple"):  # HF ModelOutput
        items = value.to_tuple() if hasattr(value, "to_tuple") else vars(value).values()
        for item in items:
            yield from tensors_in(item)


class _Buffers:
    """Stable ids for the storages tensors live in (views share their base's id)."""

    def __init__(self) -> None:
        self._by_storage: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self._ids: dict[int, int] = {}
        self._next = 0

    def id_of(self, tensor: torch.Tensor) -> tuple[int, bool]:
        """(buffer id, whether this is the first time the buffer is seen)."""
        try:
            storage = tensor.untyped_storage()
            key = storage.data_ptr() if storage.data_ptr() else id(storage)
        except (RuntimeError, NotImplementedError):  # sparse or meta tensors
            key = id(tensor)
        if key in self._ids and key in self._by_storage:
            return self._ids[key], False
        self._next += 1
        self._ids[key] = self._next
        with contextlib.suppress(TypeError):
            self._by_storage[key] = tensor.untyped_storage()
        return self._next, True

    def alive(self) -> list[int]:
        """Ids of the buffers whose storage something still holds (an output, a cache, the
        optimizer's state): they outlive the traced program."""
        return sorted(self._ids[key] for key in list(self._by_storage.keys()) if key in self._ids)


_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd
_COMPOSITES: dict[Any, bool] = {}


def _is_composite(func: Any) -> bool:
    """Whether ``func``'s C++ kernel is CompositeImplicitAutograd: it only calls other aten ops
    (a Python-only decomposition, as upsample_* have for tracing, does not count: eager runs
    the real kernel)."""
    known = _COMPOSITES.get(func)
    if known is None:
        known = _COMPOSITES[func] = bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _COMPOSITE))
    return known


class Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Lowers every aten call as it runs into ``state``; counts what the table does not know."""

    def __init__(self, scopes: list[str], guard: WriteGuard) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.scopes = scopes
        self.guard = guard
        self.phase: str | None = None
        self.state = WalkState()
        self.dataflow: list[tuple[tuple[int, ...], tuple[tuple[int, int], ...]]] = []
        self.buffers = _Buffers()
        self.kernels = KernelLog()
        self.values = TinyValues()

    def scope(self) -> str | None:
        """The innermost module running; in a training trace, the phase instead."""
        if self.phase is not None:
            return self.phase
        return self.scopes[-1] if self.scopes else None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        namespace = str(getattr(func, "namespace", "aten"))
        key = str(func.overloadpacket.__name__)
        if namespace != "aten":  # other namespaces' entries are keyed "c10d.allreduce_"
            key = f"{namespace}.{key}"
        entry = TABLE.get(key)
        if entry is None and namespace == "aten" and _is_composite(func):
            # A composite op (conv2d, einsum, scaled_dot_product_attention...) reaches this mode
            # whole under inference_mode; run the decomposition eager runs, with the mode on, so
            # that its parts are recorded (once: the composite itself records nothing).
            with self:
                return func._op_dk(_COMPOSITE, *args, **kwargs)
        self.guard.before(func, args, kwargs)
        self.values.see(key, args)
        out = func(*args, **kwargs)
        call = AtenCall(func, tuple(args), dict(kwargs), out)
        name = call.name
        state = self.state
        state.executed += 1
        state.static += 1  # eager PyTorch runs what it records: the program text is the run
        touched, reads = self._dataflow(args, kwargs, out)
        if namespace == "profiler":  # record_function markers around optimizer steps
            state.free += 1
            state.free_reasons[f"{namespace}.{name}"] = PROFILER_REASON
            return out
        start, free = len(state.operations), state.free
        scope = self.scope()
        lower(state, REGISTRY, entry, key, 1, (call, TorchContext(scope)), label=f"{namespace}.{name}")
        if scope is None and len(state.operations) > start:
            _label_function(state.operations, start)
        if self.phase == "backward" and len(state.operations) > start and recomputing():  # checkpoint recompute
            mark_recomputed(state.operations, start)
        if state.free == free:  # modeled (its records) or unmodeled (none): a kernel either way
            module = self.scopes[-1] if self.scopes else scope
            self.kernels.add(func, name, start, len(state.operations), module, scope, touched, reads)
        return out

    def finish(self) -> None:
        """A last dataflow step that reads every buffer still held when the program ends, so the
        liveness walk keeps outputs and state to the end and frees everything else after its
        last use."""
        self.dataflow.append((tuple(self.buffers.alive()), ()))

    def _dataflow(self, args: Any, kwargs: Any, out: Any) -> tuple[list[tuple[int, torch.Tensor]], int]:
        """Note the buffers the call reads and allocates; returns every tensor it touched with
        its buffer id (what its kernel's sizes are read from, if it has one), its arguments first,
        and how many of them are its arguments."""
        reads = []
        touched = []
        for tensor in tensors_in((args, kwargs)):
            buffer = self.buffers.id_of(tensor)[0]
            reads.append(buffer)
            touched.append((buffer, tensor))
        allocs = []
        for tensor in tensors_in(out):
            buffer, new = self.buffers.id_of(tensor)
            touched.append((buffer, tensor))
            if new:
                allocs.append((buffer, tensor.numel() * tensor.element_size()))
        self.dataflow.append((tuple(dict.fromkeys(reads)), tuple(allocs)))
        return touched, len(reads)


def _directory(path: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(path)), "")


#: torch's and our own package folders and the standard library's; site-packages (where a
#: user's model library lives, transformers say) is the user's even when inside the latter.
_LIBRARY_DIRS = (
    _directory(torch.__file__),
    os.path.join(os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")), ""),
    os.path.join(sysconfig.get_paths()["stdlib"], ""),
)
_SITE_DIRS = tuple(os.path.join(sysconfig.get_paths()[key], "") for key in ("purelib", "platlib"))
_USER_CODE: dict[Any, bool] = {}


def _is_user(filename: str) -> bool:
    path = os.path.abspath(filename)
    if filename.startswith("<frozen") or path.startswith(_LIBRARY_DIRS[:2]):
        return False
    return not path.startswith(_LIBRARY_DIRS[2]) or path.startswith(_SITE_DIRS)


def _user_function() -> str | None:
    """The innermost function on the Python stack that is the user's (not torch's, ours or the
    standard library's): ``forward`` of the model, ``loss_fn``, ``step``."""
    frame: Any = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        user = _USER_CODE.get(code)
        if user is None:
            user = _USER_CODE[code] = _is_user(code.co_filename)
        if user:
            return str(code.co_qualname).rpartition("<locals>.")[2]  # build.<locals>.step is step
        frame = frame.f_back
    return None


def _label_function(operations: list[Operation], start: int) -> None:
    """Records of an unscoped call (outside every submodule) carry the user's function that made
    them, so the per-scope table groups them by it rather than as one "(no scope)" row."""
    function = _user_function()
    if not function:
        return
    for i in range(start, len(operations)):
        op = operations[i]
        if "function" not in op.attrs:
            operations[i] = op.relabeled(FrozenAttrs.trusted({**op.attrs, "function": function}))


@contextlib.contextmanager
def module_scopes(model: Any, scopes: list[str]) -> Iterator[None]:
    """Push each submodule's qualified name while its forward runs; hooks always removed."""
    handles = []
    try:
        if isinstance(model, torch.nn.Module):
            for name, module in model.named_modules():
                if not name:
                    continue

                def enter(_module: Any, _args: Any, name: str = name) -> None:
                    scopes.append(name)

                def leave(_module: Any, _args: Any, _out: Any, name: str = name) -> None:
                    if scopes and scopes[-1] == name:
                        scopes.pop()

                handles.append(module.register_forward_pre_hook(enter))
                handles.append(module.register_forward_hook(leave, always_call=True))
        yield
    finally:
        for handle in handles:
            handle.remove()
