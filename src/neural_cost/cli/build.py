"""A user's workload named ``FILE.py:build``: loaded, built, and its framework told.

``build`` is a function of no arguments returning one of:

- ``(fn_or_model, args)`` or ``(fn_or_model, args, kwargs)``: ``fn_or_model(*args, **kwargs)``
  is analyzed as it is. A training step written as a function goes here too: JAX, a jitted
  optax step ``(params, opt_state, batch) -> (params, opt_state, loss)``; TensorFlow, a
  ``tf.function`` that computes gradients with ``GradientTape`` and applies them (its
  variables are put back after timing). Its gradient and update operations are counted as
  the program's own.
- a dict ``{"model": ..., "args": (...), "kwargs": {...}, "training": True, "loss_fn": ...,
  "optimizer": ...}`` (``kwargs``, ``loss_fn`` and ``optimizer`` optional): a PyTorch training
  step built from a model. Each timed run and the trace are one step, with grad enabled: the
  forward, the backward of ``loss_fn(output)`` (default: the sum of the first output) and
  ``optimizer.step()``, under the scopes ``forward``, ``backward`` and ``optimizer``;
  parameters, gradients and the optimizer state are put back afterwards. Without
  ``"training"`` the dict is the same as the tuple form.

The script is registered in ``sys.modules`` before it runs, as ``python FILE.py`` would have
it, so ``@dataclass`` and Flax modules defined in it work. Frameworks are told apart by the
module names of types, so nothing here imports one that the workload did not.
``analysis.workload.analyze_workload`` then analyzes it with ``adapters.adapter_for(framework)``.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import itertools
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import NeuralCostError
from .exits import exits_reported

SPEC_FORM = "FILE.py:build (a Python file, a colon, and the name of a function of no arguments in it)"

# the top-level package a type comes from → the framework that runs it
_PACKAGE_FRAMEWORK = {
    "jax": "jax",
    "jaxlib": "jax",
    "flax": "jax",
    "equinox": "jax",
    "haiku": "jax",
    "torch": "torch",
    "tensorflow": "tensorflow",
    "keras": "tensorflow",
    "tf_keras": "tensorflow",
}
_MAX_LEAVES = 10_000  # enough to see a model's arrays; a huge pytree need not be walked whole
_loaded = itertools.count()


def parse_spec(spec: str) -> tuple[Path, str]:
    """``"FILE.py:build"`` → (the file, checked to exist, as an absolute path; the attribute name)."""
    path_text, colon, name = spec.rpartition(":")
    if not colon or not path_text or not name.isidentifier():
        raise NeuralCostError(f"{spec!r} is not {SPEC_FORM}; for example bench.py:build")
    path = Path(path_text).expanduser()
    if not path.is_file():
        where = "is a directory" if path.is_dir() else "does not exist"
        raise NeuralCostError(f"{spec}: {path_text} {where}; pass the path of a Python file that defines {name}()")
    return path.resolve(), name


def check_spec(spec: str) -> tuple[Path, str]:
    """``parse_spec`` plus, without running the script, that it parses and binds the name
    somewhere (skipped when a star import could bind it): a typo is caught before any child starts."""
    path, name = parse_spec(spec)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError) as error:
        raise NeuralCostError(f"{spec}: cannot read {path.name} as Python ({type(error).__name__}: {error})") from None
    if name not in _defined_names(tree) and not _has_star_import(tree):
        raise NeuralCostError(f"{spec}: {path.name} defines no {name!r}; define def {name}(): ...")
    return path, name


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _has_star_import(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree))


def load_build(spec: str) -> Callable[[], Any]:
    """Execute ``FILE.py`` as a module registered in ``sys.modules`` and return its ``build``."""
    path, name = parse_spec(spec)
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"_neural_cost_build_{stem}_{next(_loaded)}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise NeuralCostError(f"{spec}: Python cannot load {path.name} as a module; pass a .py file")
    module = importlib.util.module_from_spec(loader_spec)
    # Registered before it runs: @dataclass (and so every Flax module) looks its class's
    # module up in sys.modules while the class is being defined.
    sys.modules[module_name] = module
    if str(path.parent) not in sys.path:  # the script's own sibling imports, as `python FILE.py` allows
        sys.path.insert(0, str(path.parent))
    advice = "guard its command-line code with if __name__ == '__main__':"
    with exits_reported(f"loading {path.name}", advice):
        try:
            loader_spec.loader.exec_module(module)
        except BaseException as error:
            del sys.modules[module_name]
            if not isinstance(error, Exception):
                raise
            raise NeuralCostError(f"loading {path.name} raised {type(error).__name__}: {error}") from error
    if not hasattr(module, name):
        raise NeuralCostError(f"{spec}: {path.name} defines no {name!r}; define def {name}(): ...")
    build = getattr(module, name)
    if not callable(build):
        raise NeuralCostError(
            f"{spec}: {name} is a {type(build).__name__}, not a function; define def {name}(): returning "
            f"(fn_or_model, args) or (fn_or_model, args, kwargs)"
        )
    return build  # type: ignore[no-any-return]


def _where(build: Callable[[], Any]) -> str:
    code = getattr(build, "__code__", None)
    filename = getattr(code, "co_filename", None)
    return Path(filename).name if isinstance(filename, str) else repr(build)


@dataclasses.dataclass(frozen=True)
class Workload:
    """What ``build()`` returned: ``fn(*args, **kwargs)``, and the adapter's training options
    (``training``, ``loss_fn``, ``optimizer``) for both its trace and its timing; empty for inference."""

    fn: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


_DICT_KEYS = ("model", "args", "kwargs", "training", "loss_fn", "optimizer")
CONTRACT = (
    "(fn_or_model, args), (fn_or_model, args, kwargs), or for a PyTorch training step "
    "{'model': model, 'args': (x,), 'training': True, 'loss_fn': ..., 'optimizer': ...}"
)


def takes_batch(build: Callable[..., Any]) -> bool:
    """Whether ``build`` has a ``batch`` parameter (``def build(batch=8)``): ``predict --batch N``
    and the framework floor's batch-1 run call it with one."""
    import inspect

    try:
        return "batch" in inspect.signature(build).parameters
    except (TypeError, ValueError):
        return False


def build_workload(build: Callable[..., Any], batch: int | None = None) -> Workload:
    """Call ``build()`` — ``build(batch=N)`` when ``batch`` is given — and check what it returned
    against the contract in this module's docstring."""
    name = getattr(build, "__name__", "build")
    where = _where(build)
    if batch is not None and not takes_batch(build):
        raise NeuralCostError(
            f"--batch {batch} calls {name}(batch={batch}), but {name}() in {where} takes no batch argument; "
            f"define def {name}(batch=8): and build the inputs at that batch size"
        )
    contract = f"return (fn_or_model, args) or (fn_or_model, args, kwargs) from {name}() in {where}"
    with exits_reported(f"{name}()", f"{contract} instead"):
        try:
            result = build() if batch is None else build(batch=batch)
        except Exception as error:
            raise NeuralCostError(f"{name}() in {where} raised {type(error).__name__}: {error}") from error
    options: dict[str, Any] = {}
    if isinstance(result, Mapping):
        result, options = _from_dict(result, f"{name}() in {where}")
    if not isinstance(result, tuple | list) or len(result) not in (2, 3):
        raise NeuralCostError(f"{name}() in {where} returned {type(result).__name__}; {contract}")
    fn, args = result[0], result[1]
    kwargs = result[2] if len(result) == 3 else None
    if not callable(fn):
        raise NeuralCostError(
            f"{name}() in {where} returned {type(fn).__name__} as fn_or_model, not callable; {contract}"
        )
    if not isinstance(args, tuple | list):
        raise NeuralCostError(
            f"{name}() in {where} returned args of type {type(args).__name__}; args is a tuple of positional "
            f"arguments (one argument x is (x,))"
        )
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise NeuralCostError(f"{name}() in {where} returned kwargs of type {type(kwargs).__name__}, not a dict")
    return Workload(fn, tuple(args), dict(kwargs or {}), options)


def _from_dict(result: Mapping[Any, Any], who: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The dict form as ``((model, args, kwargs), training options)``."""
    unknown = [key for key in result if key not in _DICT_KEYS]
    if unknown:
        raise NeuralCostError(
            f"{who} returned a dict with key(s) {', '.join(map(repr, unknown))}; its keys are "
            f"{', '.join(map(repr, _DICT_KEYS))}"
        )
    if "model" not in result:
        raise NeuralCostError(f"{who} returned a dict without 'model'; {CONTRACT}")
    training = result.get("training", False)
    if not isinstance(training, bool):
        raise NeuralCostError(f"{who} returned 'training': {training!r}; it is True (a training step) or False")
    extra = [key for key in ("loss_fn", "optimizer") if result.get(key) is not None]
    if extra and not training:
        raise NeuralCostError(
            f"{who} returned {' and '.join(map(repr, extra))} without 'training': True; they make a training step"
        )
    if result.get("loss_fn") is not None and not callable(result["loss_fn"]):
        raise NeuralCostError(f"{who} returned 'loss_fn' of type {type(result['loss_fn']).__name__}, not callable")
    options: dict[str, Any] = {"training": True, **{key: result[key] for key in extra}} if training else {}
    return (result["model"], result.get("args", ()), result.get("kwargs")), options


def call_build(build: Callable[[], Any]) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """``build_workload`` for what times inference only (``compare``): ``(fn_or_model, args, kwargs)``."""
    workload = build_workload(build)
    if workload.options:
        raise NeuralCostError(
            f"{getattr(build, '__name__', 'build')}() returned a training step; neural-cost compare times "
            f"inference: analyze a training step with neural-cost analyze"
        )
    return workload.fn, workload.args, workload.kwargs


def training_options(workload: Workload, adapter: Any, framework: str) -> dict[str, Any]:
    """The workload's training options, for an adapter that builds a training step from a model
    (PyTorch); elsewhere a training step is a function, returned as ``(train_step, args)``."""
    if not workload.options or getattr(adapter, "traces_training_step", False):
        return dict(workload.options)
    raise NeuralCostError(
        f"'training': True builds a PyTorch training step from a model; a {_FRAMEWORK_NAMES.get(framework, framework)} "
        f"training step is a function: return (train_step, args) from build() — JAX: a jitted step "
        f"(params, opt_state, batch) -> (params, opt_state, loss); TensorFlow: a tf.function that applies gradients"
    )


def _framework_of(value: Any) -> str | None:
    for cls in type(value).__mro__:
        package = str(cls.__module__).partition(".")[0]
        framework = _PACKAGE_FRAMEWORK.get(package)
        if framework is not None:
            return _keras_backend() if package == "keras" else framework
    return None


def _keras_backend() -> str:
    """The framework a Keras 3 model runs on: its backend (``KERAS_BACKEND=jax`` makes a JAX
    program, which was told to be TensorFlow's and failed there), TensorFlow where it says none."""
    keras = sys.modules.get("keras")
    try:
        backend = str(keras.backend.backend()) if keras is not None else "tensorflow"
    except Exception:  # an old Keras without backend(), or one half imported
        backend = "tensorflow"
    return backend if backend in ("jax", "torch") else "tensorflow"


def _leaves(value: Any) -> Iterator[Any]:
    """Leaves of nested tuples, lists, dicts and dataclasses, without importing any framework."""
    stack = [value]
    seen = 0
    while stack and seen < _MAX_LEAVES:
        item = stack.pop()
        seen += 1
        if isinstance(item, tuple | list):
            stack.extend(reversed(item))
        elif isinstance(item, Mapping) and _framework_of(item) in (None, "jax"):  # FrozenDict is a Mapping
            stack.extend(reversed(list(item.values())))
        elif dataclasses.is_dataclass(item) and not isinstance(item, type) and _framework_of(item) is None:
            stack.extend(getattr(item, f.name, None) for f in reversed(dataclasses.fields(item)))
        else:
            yield item


def infer_framework(fn_or_model: Any, args: Any = (), kwargs: Mapping[str, Any] | None = None) -> str:
    """``"jax"``, ``"torch"`` or ``"tensorflow"``: from the model's type when a framework
    defines it (an ``nn.Module``, a Keras model or ``tf.Module``, a Flax module, a jitted
    function), else from the types of the array leaves of ``args`` and ``kwargs``."""
    own = _framework_of(fn_or_model)
    if own is None:
        bound_to = getattr(fn_or_model, "__self__", None)  # model.apply of a Flax module
        own = _framework_of(bound_to) if bound_to is not None else None
    if own is not None:
        return own
    found: dict[str, str] = {}
    for leaf in _leaves((args, dict(kwargs or {}))):
        framework = _framework_of(leaf)
        if framework is not None:
            found.setdefault(framework, type(leaf).__module__ + "." + type(leaf).__qualname__)
    if len(found) == 1:
        return next(iter(found))
    name = getattr(fn_or_model, "__qualname__", type(fn_or_model).__name__)
    if not found:
        raise NeuralCostError(
            f"cannot tell the framework of {name}: it is a plain {type(fn_or_model).__name__} and its arguments hold "
            f"no JAX, PyTorch or TensorFlow arrays (numpy arrays belong to none); return a framework model or "
            f"framework arrays (jnp.asarray(x), torch.as_tensor(x), tf.constant(x)) from build()"
        )
    listed = ", ".join(f"{fw} ({example})" for fw, example in sorted(found.items()))
    raise NeuralCostError(
        f"cannot tell the framework of {name}: its arguments mix {listed}; give build() arrays of one framework"
    )


_FRAMEWORK_NAMES = {"jax": "JAX", "torch": "PyTorch", "tensorflow": "TensorFlow"}


def chosen_framework(
    asked: str | None, fn_or_model: Any, args: Any = (), kwargs: Mapping[str, Any] | None = None
) -> str:
    """``--framework`` when it agrees with the workload, else the inferred one; a disagreement
    is an error before anything is traced: tracing a JAX program with the PyTorch adapter
    records no operations, and a report of nothing must not look like a report of everything."""
    if asked is None:
        return infer_framework(fn_or_model, args, kwargs)
    try:
        inferred = infer_framework(fn_or_model, args, kwargs)
    except NeuralCostError:  # a plain function of numpy arrays, say: the flag is what tells
        return asked
    if inferred != asked:
        name = getattr(fn_or_model, "__qualname__", type(fn_or_model).__name__)
        raise NeuralCostError(
            f"--framework {asked} does not match the workload: build() returned a {_FRAMEWORK_NAMES[inferred]} "
            f"program ({name}, told from the types of the model and its arguments), not a "
            f"{_FRAMEWORK_NAMES[asked]} one; pass --framework {inferred} or leave --framework out"
        )
    return asked
