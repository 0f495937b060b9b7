"""Per-device memory of sharded JAX programs: the boundary's shard shapes and the memory profile.

JAX reads ``--xla_force_host_platform_device_count=8`` only when it first starts, so every
8-device program runs in one subprocess (``PROGRAMS`` after ``_mesh.PRELUDE``, the mesh and
the MLP) that prints its figures as JSON. XLA's ``memory_analysis()`` of the same compiled
program is the independent reference for the bytes one device's arguments take.

By hand, float32 (4 B), 8 devices, B, D, H, O = 256, 32, 64, 16:
  data parallel: w1 (32, 64) 8,192 B and w2 (64, 16) 4,096 B replicated = 12,288 B per device;
    x (256, 32) sharded P("x") → (32, 32) = 4,096 B; y (256, 16) → (32, 16) = 2,048 B;
    arguments 12,288 + 4,096 + 2,048 = 18,432 B per device.
  tensor parallel: w1 P(None, "x") → (32, 8) = 1,024 B; w2 P("x", None) → (8, 16) = 512 B;
    x replicated (256, 32) = 32,768 B; arguments 1,024 + 512 + 32,768 = 34,304 B.
  shard_map of v * 2 over (2048,) with P("x") in and out: input and output (256,) = 1,024 B each.
  a jit with in_shardings P("x") given a host NumPy (256, 32): the compiled program takes a
    (32, 32) part, 4,096 B per device (not the 32,768 B of the whole array).
"""

from __future__ import annotations

import pytest

from ._mesh import run_programs

pytest.importorskip("jax")

PROGRAMS = r"""
from neural_cost.analysis.memory import memory_profile

def boundary(trace):
    return [[t.name, t.role, list(t.shape), None if t.shard_shape is None else list(t.shard_shape), t.device_bytes]
            for t in trace.boundary]

def xla_memory(adapter):
    analysis = adapter.executables._entries[-1].compiled.memory_analysis()
    return {"arguments": analysis.argument_size_in_bytes, "outputs": analysis.output_size_in_bytes}

dp = JaxAdapter(cross_check=True)
trace = dp.trace(step, ((put((D, H), P()), put((H, O), P())), put((B, D), P("x")), put((B, O), P("x"))),
                 param_argnums=0)
memory = memory_profile(estimate_trace(trace), training=True, optimizer_state_multiplier=2)
out["data_parallel"] = {"boundary": boundary(trace), "xla": xla_memory(dp), "memory": memory.to_dict()}

tp = JaxAdapter(cross_check=True)
trace = tp.trace(mlp, (put((D, H), P(None, "x")), put((H, O), P("x", None)), put((B, D), P())), param_argnums=(0, 1))
out["tensor_parallel"] = {"boundary": boundary(trace), "xla": xla_memory(tp),
                          "memory": memory_profile(estimate_trace(trace)).to_dict()}

mesh = Mesh(np.array(jax.devices()), ("x",))
double = jax.shard_map(lambda v: v * 2.0, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
v = jax.device_put(jnp.arange(2048, dtype=jnp.float32), NamedSharding(mesh, P("x")))
compiled = JaxAdapter(cross_check=True)
out["shard_map"] = {"boundary": boundary(compiled.trace(double, v)), "xla": xla_memory(compiled)}
uncompiled = JaxAdapter(cross_check=False).trace(double, v)
out["shard_map_uncompiled"] = {"boundary": boundary(uncompiled), "notes": list(uncompiled.notes)}
uncompiled = JaxAdapter(cross_check=False).trace(
    step, ((put((D, H), P()), put((H, O), P())), put((B, D), P("x")), put((B, O), P("x"))), param_argnums=0)
out["data_parallel_uncompiled"] = {"boundary": boundary(uncompiled), "devices": uncompiled.devices}

host = JaxAdapter(cross_check=True)
scaled = jax.jit(lambda v: jnp.tanh(v) * 2.0, in_shardings=NamedSharding(auto, P("x")))
out["host_input"] = {"boundary": boundary(host.trace(scaled, np.ones((B, D), np.float32))), "xla": xla_memory(host)}
"""


@pytest.fixture(scope="module")
def measured():
    return run_programs(PROGRAMS)


def _arguments(rows):
    return [row for row in rows if row[1] in ("input", "parameter")]


def test_data_parallel_inputs_are_counted_at_their_shards(measured):
    rows = _arguments(measured["data_parallel"]["boundary"])
    assert [(shape, shard, nbytes) for _name, _role, shape, shard, nbytes in rows] == [
        ([32, 64], None, 8_192),  # w1 replicated: whole on every device
        ([64, 16], None, 4_096),  # w2 replicated
        ([256, 32], [32, 32], 4_096),  # x: 256 / 8 = 32 rows
        ([256, 16], [32, 16], 2_048),  # y
    ]
    # 12,288 + 4,096 + 2,048 = 18,432 B: what XLA allocates for one device's arguments
    assert sum(row[4] for row in rows) == 18_432 == measured["data_parallel"]["xla"]["arguments"]


def test_data_parallel_memory_profile_is_one_devices(measured):
    memory = measured["data_parallel"]["memory"]
    # parameters 12,288 B replicated; gradients the same (all-reduced, whole on every device); Adam 2 × 12,288
    assert (memory["parameter_bytes"], memory["gradient_bytes"], memory["optimizer_state_bytes"]) == (
        12_288,
        12_288,
        24_576,
    )
    assert (memory["input_bytes"], memory["devices"]) == (4_096 + 2_048, 8)
    # the updated parameters come back replicated: 12,288 B whole on every device
    assert memory["output_bytes"] == 12_288
    assert memory["notes"][0].startswith("2 sharded tensors at the boundary counted at the part one device holds")


def test_tensor_parallel_weights_are_counted_at_their_shards(measured):
    rows = _arguments(measured["tensor_parallel"]["boundary"])
    assert [(role, shard, nbytes) for _name, role, _shape, shard, nbytes in rows] == [
        ("parameter", [32, 8], 1_024),  # w1 column-sharded: 64 / 8 = 8 columns
        ("parameter", [8, 16], 512),  # w2 row-sharded: 64 / 8 = 8 rows
        ("input", None, 32_768),  # x replicated
    ]
    assert sum(row[4] for row in rows) == 34_304 == measured["tensor_parallel"]["xla"]["arguments"]
    assert measured["tensor_parallel"]["memory"]["parameter_bytes"] == 1_536


def test_output_shards_come_from_the_compiled_program(measured):
    rows = measured["shard_map"]["boundary"]
    # input and output (2048,) sharded 8 ways: (256,) = 1,024 B each, as XLA allocates them
    assert [(role, shard, nbytes) for _name, role, _shape, shard, nbytes in rows] == [
        ("input", [256], 1_024),
        ("output", [256], 1_024),
    ]
    assert measured["shard_map"]["xla"] == {"arguments": 1_024, "outputs": 1_024}


def test_without_a_compiled_program_no_shard_is_claimed(measured):
    rows = measured["shard_map_uncompiled"]["boundary"]
    # not known to be partitioned: counted at global shapes, (2048,) = 8,192 B, and a note says so
    assert [(role, shard, nbytes) for _name, role, _shape, shard, nbytes in rows] == [
        ("input", None, 8_192),
        ("output", None, 8_192),
    ]
    assert any(
        note.startswith("arguments sharded over 8 devices (arg0)") for note in measured["shard_map_uncompiled"]["notes"]
    )


def test_a_sharded_step_traced_without_its_executable_is_whole(measured):
    entry = measured["data_parallel_uncompiled"]
    # records at global shapes (devices 1): x and y whole, 32,768 + 16,384 B, as the records read them
    assert entry["devices"] == 1
    assert [(shard, nbytes) for _name, _role, _shape, shard, nbytes in _arguments(entry["boundary"])] == [
        (None, 8_192),
        (None, 4_096),
        (None, 32_768),
        (None, 16_384),
    ]


def test_a_host_input_is_counted_at_the_compiled_program_s_input_sharding(measured):
    entry = measured["host_input"]
    rows = _arguments(entry["boundary"])
    # the NumPy array has no sharding; the executable takes (256, 32) / 8 = (32, 32), 4,096 B, as XLA says
    assert [(shard, nbytes) for _name, _role, _shape, shard, nbytes in rows] == [([32, 32], 4_096)]
    assert entry["xla"]["arguments"] == 4_096
