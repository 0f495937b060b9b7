"""Where a report came from: versions, threads, date. Frameworks are looked up, never imported."""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import os
import platform
import sys
from typing import Any

from .._version import __version__

_FRAMEWORK_DISTS = {
    "torch": "torch",
    "jax": "jax",
    "jaxlib": "jaxlib",
    "tensorflow": "tensorflow",
    "keras": "keras",
    "flax": "flax",
    "numpy": "numpy",
}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        if dist == "tensorflow":
            try:
                return importlib.metadata.version("tensorflow-cpu")
            except importlib.metadata.PackageNotFoundError:
                return None
        return None


def _threads() -> dict[str, Any]:
    threads: dict[str, Any] = {"os_cpu_count": os.cpu_count()}
    with contextlib.suppress(AttributeError, OSError):
        threads["affinity"] = len(os.sched_getaffinity(0))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS"):
        if var in os.environ:
            threads[var] = os.environ[var]
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_num_threads"):
        threads["torch_intra_op"] = int(torch.get_num_threads())
        threads["torch_inter_op"] = int(torch.get_num_interop_threads())
    return threads


def collect_provenance(framework: str | None = None) -> dict[str, Any]:
    versions = {"neural_cost": __version__, "python": platform.python_version()}
    for module, dist in _FRAMEWORK_DISTS.items():
        if module in sys.modules or module == framework:
            version = _version(dist)
            if version is not None:
                versions[module] = version
    return {
        "versions": versions,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "threads": _threads(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "framework": framework,
    }
