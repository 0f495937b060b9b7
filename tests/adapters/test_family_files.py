"""The same family of ops lives in the file of the same name in every adapter (issue 11 item 5):
``_torch/ops_matmul.py``, ``_jax/ops_matmul.py``, ``_tf/ops_matmul.py``, and so on.

The file listing is checked without importing any framework; the tables (which builder of
which op lives in which module) are checked per framework, skipped where it is not installed.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

import neural_cost.adapters
from neural_cost.adapters._registry import Free

ADAPTERS = Path(neural_cost.adapters.__file__).parent
PACKAGES = {"torch": "_torch", "jax": "_jax", "tensorflow": "_tf"}
ALL = frozenset(PACKAGES)

#: family module → the frameworks whose tables have that family. Where one is missing, why.
FAMILIES: dict[str, frozenset[str]] = {
    # TensorFlow has no fused attention op in its table: Keras attention is MatMul/Einsum + Softmax.
    "ops_attention": frozenset({"torch", "jax"}),
    "ops_collectives": frozenset({"torch", "jax"}),
    "ops_conv": ALL,
    "ops_free": ALL,
    "ops_indexing": ALL,
    "ops_linalg": ALL,
    "ops_matmul": ALL,
    "ops_movement": ALL,
    # JAX has no norm or softmax primitive (they are compositions), but it has pooling, which
    # the PyTorch table keeps with its norms.
    "ops_norms": ALL,
    "ops_pointwise": ALL,
    "ops_random_optim": ALL,
    "ops_reduce": ALL,
    # JAX and TensorFlow recurrent layers are loops (scan, While) of matmuls and elementwise ops.
    "ops_rnn": frozenset({"torch"}),
}


def _families_of(framework: str) -> set[str]:
    return {family for family, frameworks in FAMILIES.items() if framework in frameworks}


@pytest.mark.parametrize("framework", sorted(PACKAGES))
def test_each_adapter_has_exactly_the_family_files_of_its_framework(framework):
    files = {path.stem for path in (ADAPTERS / PACKAGES[framework]).glob("ops_*.py")}
    assert files == _families_of(framework)


def test_no_adapter_keeps_an_old_family_file():
    # The names the same families had before they were split: ops_compute (TensorFlow),
    # prims_* (JAX). A file by either name would be a second home for a family.
    stale = [p.name for p in ADAPTERS.glob("_*/*.py") if p.stem == "ops_compute" or p.stem.startswith("prims_")]
    assert stale == []


def _table(framework: str) -> dict[str, object]:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    pytest.importorskip(framework)  # the package names the adapters share
    importlib.import_module(f"neural_cost.adapters.{framework}")  # registers every family module
    return importlib.import_module(f"neural_cost.adapters.{PACKAGES[framework]}.table").TABLE


@pytest.mark.parametrize("framework", sorted(PACKAGES))
def test_every_builder_lives_in_a_family_module(framework):
    package = f"neural_cost.adapters.{PACKAGES[framework]}"
    families = {f"{package}.{family}" for family in _families_of(framework)}
    builders = {name: entry for name, entry in _table(framework).items() if not isinstance(entry, Free)}
    outside = {name: getattr(b, "__module__", None) for name, b in builders.items()}
    outside = {name: module for name, module in outside.items() if module not in families}
    assert outside == {}
    # Every family registers builders; the JAX and TensorFlow ops_free hold only Free entries.
    used = {builder.__module__ for builder in builders.values()}
    assert families - {f"{package}.ops_free"} <= used


# The same operation in each framework → the family file that holds it in every adapter.
SAME_FAMILY = [
    ("ops_matmul", {"torch": "mm", "jax": "dot_general", "tensorflow": "MatMul"}),
    ("ops_conv", {"torch": "convolution", "jax": "conv_general_dilated", "tensorflow": "Conv2D"}),
    ("ops_norms", {"torch": "max_pool2d_with_indices", "jax": "reduce_window_max", "tensorflow": "MaxPool"}),
    ("ops_norms", {"torch": "_softmax", "tensorflow": "Softmax"}),
    ("ops_norms", {"torch": "native_batch_norm", "tensorflow": "FusedBatchNormV3"}),
    ("ops_indexing", {"torch": "gather", "jax": "gather", "tensorflow": "GatherV2"}),
    ("ops_indexing", {"torch": "scatter_add", "jax": "scatter-add", "tensorflow": "TensorScatterAdd"}),
    ("ops_reduce", {"torch": "sum", "jax": "reduce_sum", "tensorflow": "Sum"}),
    ("ops_random_optim", {"torch": "rand", "jax": "random_bits", "tensorflow": "RandomUniform"}),
    ("ops_pointwise", {"torch": "add", "jax": "add", "tensorflow": "AddV2"}),
    ("ops_movement", {"torch": "cat", "jax": "concatenate", "tensorflow": "ConcatV2"}),
    ("ops_linalg", {"torch": "_linalg_svd", "jax": "svd", "tensorflow": "Svd"}),
    ("ops_movement", {"torch": "upsample_bilinear2d", "tensorflow": "ResizeBilinear"}),
]
_CASES = [(family, framework, name) for family, names in SAME_FAMILY for framework, name in names.items()]


@pytest.mark.parametrize(("family", "framework", "name"), _CASES, ids=[f"{c[1]}-{c[2]}" for c in _CASES])
def test_the_same_op_is_in_the_same_family_file(family, framework, name):
    entry = _table(framework)[name]
    assert entry.__module__ == f"neural_cost.adapters.{PACKAGES[framework]}.{family}"
