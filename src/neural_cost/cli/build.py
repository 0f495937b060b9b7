"""A user's workload named ``FILE.py:build``: loaded, built, and its framework told.

``build`` is a function of no arguments returning ``(fn_or_model, args)`` or
``(fn_or_model, args, kwargs)``. The script is registered in ``sys.modules`` before it
runs, as ``python FILE.py`` would have it, so ``@dataclass`` and Flax modules defined in it
work. Frameworks are told apart by the module names of types, so nothing here imports one
that the workload did not. ``analysis.workload.analyze_workload`` then analyzes it with
``adapters.adapter_for(framework)``.
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


def call_build(build: Callable[[], Any]) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """Call ``build()`` and check what it returned: ``(fn_or_model, args)`` or ``(fn_or_model, args, kwargs)``."""
    name = getattr(build, "__name__", "build")
    where = _where(build)
    contract = f"return (fn_or_model, args) or (fn_or_model, args, kwargs) from {name}() in {where}"
    with exits_reported(f"{name}()", f"{contract} instead"):
        try:
            result = build()
        except Exception as error:
            raise NeuralCostError(f"{name}() in {where} raised {type(error).__name__}: {error}") from error
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
    return fn, tuple(args), dict(kwargs or {})


def _framework_of(value: Any) -> str | None:
    for cls in type(value).__mro__:
        framework = _PACKAGE_FRAMEWORK.get(str(cls.__module__).partition(".")[0])
        if framework is not None:
            return framework
    return None


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
