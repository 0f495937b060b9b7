"""The 8-device programs of the sharded JAX tests, run in a subprocess.

JAX reads ``--xla_force_host_platform_device_count=8`` only when it first starts, so a test
module's 8-device programs run in one subprocess: ``run_programs(source)`` runs ``PRELUDE``
then ``source`` (which fills the dict ``out``) and returns ``out`` as the subprocess printed it,
JSON on its last stdout line.

``PRELUDE`` holds what the programs share: an 8-device mesh ``auto`` over axis "x", ``put`` (an
array of ones placed with a ``PartitionSpec``), and the two-layer MLP of B, D, H, O = 256, 32,
64, 16 float32: its ``loss`` mean((tanh(x@w1)@w2 - y)²), one SGD ``step`` and the forward ``mlp``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

PRELUDE = r"""
import json
import jax, jax.numpy as jnp, numpy as np
from jax import lax
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P
from neural_cost import estimate_trace
from neural_cost.adapters import JaxAdapter

assert jax.device_count() == 8, jax.device_count()
out = {}

auto = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
def put(shape, spec):
    return jax.device_put(jnp.ones(shape, jnp.float32), NamedSharding(auto, spec))
B, D, H, O = 256, 32, 64, 16
def loss(params, xb, yb):
    w1, w2 = params
    return jnp.mean((jnp.tanh(xb @ w1) @ w2 - yb) ** 2)
def step(params, xb, yb):
    grads = jax.grad(loss)(params, xb, yb)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
def mlp(w1, w2, xb):
    return jnp.tanh(xb @ w1) @ w2
"""


def run_programs(source: str) -> dict[str, Any]:
    """``PRELUDE`` and ``source`` in a subprocess on 8 host CPU devices: the ``out`` it filled."""
    flags = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2"}
    program = PRELUDE + source + "\nprint(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found
