"""A sharded ``jit``'s records as one device's share (``adapters/_jax/sharded.py``).

JAX reads ``--xla_force_host_platform_device_count=8`` only when it first starts, so every
8-device program runs in one subprocess (``PROGRAMS`` after ``_mesh.PRELUDE``) that prints each trace as JSON
(``Trace.to_dict``) with XLA's per-device ``cost_analysis()``; the tests rebuild the traces here.

The MLP of ``_mesh.PRELUDE``: B=256, D=32, H=64, O=16, float32, loss mean((tanh(x@w1)@w2 - y)²).
Data parallel, the batch over 8 devices: 32 rows per device. By hand, per device:
  forward   x@w1  (32,32)@(32,64)        2·32·32·64 = 131,072
            h@w2  (32,64)@(64,16)        2·32·64·16 =  65,536
  backward  dW2   (32,16)ᵀ(32,64)→(16,64) 2·32·16·64 =  65,536
            dh    (32,16)@(64,16)ᵀ→(32,64) 2·32·16·64 = 65,536
            dW1   (32,64)ᵀ(32,32)→(64,32) 2·32·64·32 = 131,072
  matmuls: 458,752 per device (× 8 = 3,670,016, the unsharded step's 2·256·(32·64 + 64·16)·3).
The step's model FLOPs, its records at global shapes (the one-device trace's, by record):
  matmuls 2·256·(32·64 + 64·16)·3                                         3,670,016
  (256,64) elementwise: tanh, its derivative's sub, two muls, add_any  5 × 16,384 = 81,920
  (256,16) elementwise: sub, x², the mean's scale, d(x²)'s mul          4 × 4,096 = 16,384
  the loss's sum 256·16 - 1 = 4,095; two scalar divides 2; SGD p - 0.1·g over 3,072 parameters 6,144
  total 3,670,016 + 81,920 + 16,384 + 4,095 + 2 + 6,144 = 3,778,561.
Tensor parallel (w1 column-sharded P(None,"x"), w2 row-sharded P("x",None), x replicated):
  x@w1 (256,32)@(32,8) → 2·256·32·8 = 131,072; (256,8)@(8,16) → 2·256·8·16 = 65,536, a partial
  product each device holds whole-sized, summed by one all-reduce.
"""

from __future__ import annotations

import pytest

from ._mesh import run_programs

jax = pytest.importorskip("jax")

from neural_cost import HardwareSpec, Trace, analyze_gap, estimate_operations, estimate_trace  # noqa: E402
from neural_cost.adapters._jax.compiled import Executable  # noqa: E402
from neural_cost.adapters._jax.program import read_kernels  # noqa: E402
from neural_cost.adapters._jax.sharded import device_shape, device_shapes, splits  # noqa: E402
from neural_cost.core.records import Operation  # noqa: E402
from tests.helpers import cpu_measurement  # noqa: E402

SPEC = HardwareSpec("T", 1e12, 1e11, kind="cpu", source="test table")
OBSERVED = cpu_measurement((5e-6,) * 5)

PROGRAMS = r"""
def traced(fn, args, compiled=True):
    adapter = JaxAdapter(cross_check=compiled)
    trace = adapter.trace(fn, args)
    found = {"trace": trace.to_dict()}
    if compiled:
        analysis = adapter.executables._entries[-1].compiled.cost_analysis()
        found["xla"] = {key: analysis[key] for key in ("flops", "transcendentals")}
    return found

dp = ((put((D, H), P()), put((H, O), P())), put((B, D), P("x")), put((B, O), P("x")))
out["data_parallel"] = traced(step, dp)
out["data_parallel_jaxpr"] = traced(step, dp, compiled=False)  # no executable: the walker's records
ones = lambda shape: jnp.ones(shape, jnp.float32)  # one device: an unpartitioned program
out["one_device"] = traced(step, ((ones((D, H)), ones((H, O))), ones((B, D)), ones((B, O))))
out["tensor_parallel"] = traced(mlp, (put((D, H), P(None, "x")), put((H, O), P("x", None)), put((B, D), P())))
mesh = Mesh(np.array(jax.devices()), ("x",))
body = jax.shard_map(lambda v, w: lax.psum(jnp.tanh(v @ w), "x"), mesh=mesh, in_specs=(P("x"), P()), out_specs=P())
inputs = (jnp.ones((256, 32), jnp.float32), jnp.ones((32, 64), jnp.float32))
out["shard_map"] = traced(jax.jit(body), inputs)
out["shard_map_jaxpr"] = traced(jax.jit(body), inputs, compiled=False)
"""


@pytest.fixture(scope="module")
def measured():
    found = run_programs(PROGRAMS)
    return {name: {**entry, "trace": Trace.from_dict(entry["trace"])} for name, entry in found.items()}


def _flops(operations):
    return sum(op.cost.flops * op.count for op in operations)


def _kept_note(trace):
    return [note for note in trace.notes if "keep their traced shapes" in note]


SHARDED_NOTE = "partitioned over 8 devices: records are one device's share, shapes read from the partitioned HLO"


# -- data parallel ------------------------------------------------------------------------------


def test_data_parallel_matmuls_are_one_device_s(measured):
    trace = measured["data_parallel"]["trace"]
    dots = [(op.inputs, op.output, op.cost.flops) for op in trace.operations if op.name == "dot_general"]
    assert dots == [  # by hand in the module docstring, in program order
        (((32, 32), (32, 64)), (32, 64), 131_072),
        (((32, 64), (64, 16)), (32, 16), 65_536),
        (((32, 16), (32, 64)), (16, 64), 65_536),
        (((32, 16), (64, 16)), (32, 64), 65_536),
        (((32, 64), (32, 32)), (64, 32), 131_072),
    ]
    assert trace.devices == 8 and estimate_trace(trace).devices == 8
    assert SHARDED_NOTE in trace.notes
    assert not any("counted at global shapes" in note for note in trace.notes)


def test_data_parallel_records_keep_their_names_and_labels(measured):
    sharded = measured["data_parallel"]["trace"].operations
    walked = measured["data_parallel_jaxpr"]["trace"].operations
    assert len(sharded) == len(walked) + 1  # the partitioner's gradient all-reduce, appended
    for ours, theirs in zip(sharded, walked, strict=False):
        assert (ours.name, ours.kind, ours.scope, ours.count, ours.dtype) == (
            theirs.name,
            theirs.kind,
            theirs.scope,
            theirs.count,
            theirs.dtype,
        )
        assert dict(ours.attrs) == dict(theirs.attrs)


def test_data_parallel_names_what_stays_global(measured):
    trace = measured["data_parallel"]["trace"]
    # The step returns the new parameters only: XLA drops the loss value (x², its sum: 4,096 +
    # 4,095 = 8,191 FLOPs at global shapes; the two scalar divides too, but a scalar is never
    # split: the same on every device) and folds both gradient transposes into the dots that
    # feed them (0 FLOPs). Nothing else is left global.
    assert _kept_note(trace) == [
        "4 record(s) keep their traced shapes, global outside shard_map (integer_pow, reduce_sum, transpose, "
        "transpose; 8,191 FLOPs): no instruction of the partitioned HLO gives their one-device shapes; they run in "
        "no kernel (scored with the unmapped records) and are left out of hardware FLOPs and activation bounds"
    ]
    mapped = {i for kernel in trace.kernels for i in kernel.operations}
    unmapped = [op.name for i, op in enumerate(trace.operations) if i not in mapped]
    assert unmapped == ["integer_pow", "reduce_sum", "div", "div", "transpose", "transpose"]
    # every kernel's FLOPs are its (rewritten) records'
    for kernel in trace.kernels:
        assert sum(kernel.flops_by_dtype.values()) == _flops(trace.operations[i] for i in kernel.operations)


def test_data_parallel_flops_times_8_against_one_device(measured):
    sharded = measured["data_parallel"]["trace"]
    whole = measured["one_device"]["trace"]
    assert whole.devices == 1 and not _kept_note(whole)
    mapped = {i for kernel in sharded.kernels for i in kernel.operations}
    per_device = [op for i, op in enumerate(sharded.operations) if i in mapped and op.kind != "collective"]
    # Batch-sharded records × 8 are the whole step's; the SGD update (p - 0.1·g: a multiply and a
    # subtract over 32·64 + 64·16 = 3,072 parameters, 6,144 FLOPs) runs whole on every device:
    # 7 × 6,144 = 43,008 more over 8 devices. The six records no kernel runs (8,193 FLOPs,
    # above: the scalar divides' 2 among them) are the same in both traces.
    replicated = 2 * (32 * 64 + 64 * 16)
    assert 8 * _flops(per_device) == _flops(whole.operations) - 8_193 + 7 * replicated
    assert 8 * _flops(per_device) == 3_813_376  # 3,778,561 (one device) - 8,193 + 43,008


def test_data_parallel_against_xla_per_device_cost_analysis(measured):
    entry = measured["data_parallel"]
    ops = entry["trace"].operations
    dots = _flops(op for op in ops if op.kind == "matmul")
    assert dots == 458_752
    tanh = [op for op in ops if op.name == "tanh"]
    assert entry["xla"]["transcendentals"] == _flops(tanh) == 32 * 64  # XLA: tanh is a transcendental, not FLOPs
    placed = {i for kernel in entry["trace"].kernels for i in kernel.operations}
    pointwise = _flops(
        op for i, op in enumerate(ops) if i in placed and op.kind in ("elementwise", "reduce") and op.name != "tanh"
    )
    # XLA's per-device FLOPs: our matmuls + our pointwise less 512 (XLA folds the ×2 of d(x²)
    # into the mean's constant: one (32,16) multiply fewer) + 3,072 for the all-reduce of the
    # 3,072 gradient elements (one add per element; we count a ring's 7/8 of it, 2,688).
    (all_reduce,) = [op for op in ops if op.kind == "collective"]
    assert all_reduce.cost.flops == 2_688
    assert entry["xla"]["flops"] == dots + pointwise - 32 * 16 + 3_072 == 477_184


def test_data_parallel_utilization_model_flops_are_the_global_step_s(measured):
    trace = measured["data_parallel"]["trace"]
    estimate = estimate_trace(trace)
    u = analyze_gap(estimate, OBSERVED, SPEC).utilization
    # model: the step's records at global shapes, 3,778,561 (module docstring) — what the step on one device does
    assert trace.global_model_flops == estimate.global_model_flops == u.model_flops == 3_778_561
    assert u.model_flops == estimate_trace(measured["one_device"]["trace"]).flops
    # hardware: one device's records a kernel runs × 8: matmuls 458,752, (256,64) elementwise 5 × 2,048,
    # (32,16) sub, scale and d(x²) 3 × 512 (x² and the sum stay global, in no kernel; the scalar
    # divides are in none), SGD 6,144 (whole on every device), all-reduce 7/8 · 3,072 = 2,688
    per_device = 458_752 + 5 * 2_048 + 3 * 512 + 6_144 + 2_688
    assert (u.devices, u.hardware_flops, u.recomputed_flops) == (8, 8 * per_device, 0) == (8, 3_834_880, 0)
    # 7 × 6,144 repeated + 8 × 2,688 reduced - 8,191 (x², sum) - 2 (divides): XLA runs none of the last
    assert u.partitioning_flops == 7 * 6_144 + 8 * 2_688 - 8_193 == 56_319
    assert u.mfu == pytest.approx(3_778_561 / (5e-6 * 1e12 * 8)) and u.hfu == pytest.approx(3_834_880 / 40e6)


def test_without_its_executable_a_sharded_step_is_named_global(measured):
    trace = measured["data_parallel_jaxpr"]["trace"]
    assert (trace.devices, trace.global_model_flops) == (1, None)
    assert trace.operations[0].inputs == ((256, 32), (32, 64))  # the jaxpr's global shapes
    assert [note for note in trace.notes if "no partitioned executable" in note] == [
        "arguments sharded over 8 devices (arg1, arg2), but no partitioned executable was read (trace after "
        "benchmark, or with cross_check=True): the boundary and the records outside shard_map are counted at global "
        "shapes"
    ]
    assert all(tensor.shard_shape is None for tensor in trace.boundary)


# -- tensor parallel ----------------------------------------------------------------------------


def test_tensor_parallel_partial_product(measured):
    entry = measured["tensor_parallel"]
    trace = entry["trace"]
    rows = [(op.name, op.inputs, op.output, op.cost.flops) for op in trace.operations]
    assert rows[:3] == [
        ("dot_general", ((256, 32), (32, 8)), (256, 8), 131_072),
        ("tanh", ((256, 8),), (256, 8), 2_048),
        ("dot_general", ((256, 8), (8, 16)), (256, 16), 65_536),  # the partial product
    ]
    assert rows[3][0] == "all-reduce" and trace.devices == 8 and not _kept_note(trace)
    assert SHARDED_NOTE in trace.notes
    # XLA's per-device FLOPs: the two matmuls + one add per element of the all-reduced f32[256,16]
    # (4,096; we count a ring's 7/8: 3,584); tanh is its transcendentals
    assert entry["xla"]["flops"] == 131_072 + 65_536 + 256 * 16
    assert entry["xla"]["transcendentals"] == 256 * 8


# -- shard_map: already per device --------------------------------------------------------------


def test_shard_map_records_are_unchanged(measured):
    compiled = measured["shard_map"]["trace"]
    walked = measured["shard_map_jaxpr"]["trace"]
    assert compiled.operations == walked.operations  # (32,32)@(32,64), tanh, psum: one device's already
    assert compiled.operations[0].inputs == ((32, 32), (32, 64)) and compiled.devices == 8
    assert not _kept_note(compiled)


# -- on text ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("local", "whole", "mesh", "expected"),
    [
        ((32, 64), (256, 64), (8,), True),
        ((32, 16), (32, 64), (8,), False),  # a cut of 4 on a mesh of one axis of 8
        ((32, 16), (32, 64), (2, 4), True),
        ((128, 16), (256, 64), (2, 4), True),  # one axis per dim
        ((32, 64), (256, 64), (2, 4), True),  # both axes on one dim
        ((64, 16), (256, 64), (2, 4), False),  # 4 and 4: one axis of 4 only
        ((32, 64), (256,), (8,), False),  # another rank
    ],
)
def test_a_part_is_cut_by_mesh_axes(local, whole, mesh, expected):
    assert splits(local, whole, mesh) is expected


def test_device_shapes_through_xla_s_merged_and_transposed_layouts():
    # (8,16,32) over a (2,4) mesh held as (64,32): the batch cut by 2 is (4,16,32), the first cut
    # (leading dims first) that merges to it; held transposed as (32,64), the same cut
    assert device_shape((64, 32), (8, 16, 32), (2, 4)) == (4, 16, 32)
    assert device_shape((32, 64), (8, 16, 32), (2, 4)) == (4, 16, 32)
    # (32,4,8) held as (32,8): the heads cut by 4 (the 1 dropped) or the first dim by 4 (8·4
    # merged): both fit, leading dims first; a record's other arrays decide (its rule checks them)
    assert device_shapes((32, 8), (32, 4, 8), (2, 4))[:2] == ((8, 4, 8), (32, 1, 8))
    assert device_shape((64, 32), (32, 64), (8,)) == (32, 64)  # as many elements: whole, transposed
    assert device_shape((48,), (256,), (8,)) is None  # no cut holds 48 elements


PARTITIONED = "\n".join(
    [
        "HloModule jit_f, is_scheduled=true, num_partitions=8",
        "",
        "ENTRY %main (x: f32[32,32], w: f32[32,64]) -> f32[32,64] {",
        "  %x = f32[32,32]{1,0} parameter(0)",
        "  %w = f32[32,64]{1,0} parameter(1)",
        "  %dot = f32[32,64]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        'metadata={op_name="jit(f)/dot_general"}',
        '  ROOT %t = f32[32,64]{1,0} tanh(%dot), metadata={op_name="jit(f)/tanh"}',
        "}",
    ]
)


PARTITIONED_OPS = (
    Operation("dot_general", "matmul", ((256, 32), (32, 64)), (256, 64), "float32"),
    Operation("tanh", "elementwise", ((256, 64),), (256, 64), "float32", attrs={"op": "tanh"}),
    Operation("exp", "elementwise", ((256, 64),), (256, 64), "float32", attrs={"op": "exp"}),  # XLA removed it
)


def test_read_kernels_rewrites_and_names_on_text():
    ops = PARTITIONED_OPS
    program = read_kernels(Executable(None, None, PARTITIONED, 0.0), ops, (), 8)
    assert program.devices == 8
    dot, tanh, exp = program.records
    assert (dot.inputs, dot.output, dot.cost.flops) == (((32, 32), (32, 64)), (32, 64), 131_072)  # 2·32·32·64
    assert (tanh.inputs, tanh.output, tanh.cost.flops) == (((32, 64),), (32, 64), 2_048)
    assert exp == ops[2]  # no instruction computes it: left global, and named
    assert {k.name: dict(k.flops_by_dtype) for k in program.kernels} == {
        "dot": {"float32": 131_072},
        "t": {"float32": 2_048},
    }
    assert program.notes[:2] == (
        SHARDED_NOTE,
        "1 record(s) keep their traced shapes, global outside shard_map (exp; 16,384 FLOPs): no instruction of the "
        "partitioned HLO gives their one-device shapes; they run in no kernel (scored with the unmapped records) and "
        "are left out of hardware FLOPs and activation bounds",
    )


def _module(*lines):
    head = ["HloModule jit_f, is_scheduled=true, num_partitions=8", "", "ENTRY %main (x: f32[32,32]) -> f32[32,64] {"]
    return "\n".join([*head, *lines, "}"])


# x (256,32)@w (32,64) held as f32[32,32] @ f32[32,8] → f32[32,64]: each array is a cut of its own,
# but no combination is a matmul (8 columns in, 64 out): the dot keeps its global shapes.
UNFIT = _module(
    "  %x = f32[32,32]{1,0} parameter(0)",
    "  %w = f32[32,8]{1,0} parameter(1)",
    "  %dot = f32[32,64]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
    'metadata={op_name="jit(f)/dot_general"}',
    '  ROOT %t = f32[32,64]{1,0} tanh(%dot), metadata={op_name="jit(f)/tanh"}',
)


def test_a_record_kept_global_leaves_its_kernel_and_the_per_device_figures():
    from neural_cost.adapters._jax.hlo import compiled_kernels
    from neural_cost.analysis.memory import memory_profile

    ops = PARTITIONED_OPS[:2]
    placed = compiled_kernels(Executable(None, None, UNFIT, 0.0).compiled, ops, loops=(), default_trip_count=8)
    assert [k.operations for k in placed.kernels] == [(0,), (1,)]  # the dot is placed at %dot
    program = read_kernels(Executable(None, None, UNFIT, 0.0), ops, (), 8)
    dot, tanh = program.records
    assert dot == ops[0] and tanh.output == (32, 64)  # the dot global (2·256·32·64 = 1,048,576 FLOPs)
    # taken out of %dot: no kernel holds a global record's FLOPs
    assert {k.name: (k.operations, dict(k.flops_by_dtype)) for k in program.kernels} == {
        "dot": ((), {}),
        "t": ((1,), {"float32": 2_048}),
    }
    # global model FLOPs: the traced records once, 1,048,576 + 256·64 = 1,064,960
    assert program.global_model_flops == 1_064_960
    # activations: only tanh's (32,64) output, 8,192 B, not the dot's (256,64) 65,536 B
    estimate = estimate_operations(program.records, kernels=program.kernels, devices=8)
    memory = memory_profile(estimate)
    assert (memory.activation_minimum_peak_bytes, memory.activation_conservative_peak_bytes) == (8_192, 8_192)
    assert "1 record no kernel of the partitioned program runs" in memory.notes[-1]


def test_each_equation_xla_joined_is_in_a_shard_map_by_its_own_name():
    # One instruction computes a shard_map's tanh (per device already, (32,64)) and a global exp
    # (256,64) joined by ';': the exp is outside the shard_map, so it is cut to (32,64): 2,048 FLOPs.
    joined = _module(
        "  %x = f32[32,64]{1,0} parameter(0)",
        '  ROOT %e = f32[32,64]{1,0} exponential(%x), metadata={op_name="jit(f)/shard_map/tanh;jit(f)/exp"}',
    )
    ops = (
        Operation("tanh", "elementwise", ((32, 64),), (32, 64), "float32", attrs={"op": "tanh"}),
        Operation("exp", "elementwise", ((256, 64),), (256, 64), "float32", attrs={"op": "exp"}),
    )
    program = read_kernels(Executable(None, None, joined, 0.0), ops, (), 8)
    tanh, exp = program.records
    assert tanh == ops[0] and (exp.inputs, exp.output, exp.cost.flops) == (((32, 64),), (32, 64), 2_048)
    assert not [note for note in program.notes if "keep their traced shapes" in note]
    # model FLOPs over 8 devices: the shard_map's tanh on each, 8 × 2,048, and the exp once, 256·64
    assert program.global_model_flops == 8 * 2_048 + 16_384
