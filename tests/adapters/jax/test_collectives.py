"""Collectives in JAX programs: ``shard_map``'s from the jaxpr, the SPMD partitioner's from the HLO.

JAX reads ``--xla_force_host_platform_device_count=8`` only when it first starts, so every
8-device program runs in one subprocess (``PROGRAMS`` after ``_mesh.PRELUDE``, the mesh and
the MLP) that prints its figures as JSON; the tests assert on them. Parsing (replica groups,
asynchronous collectives) runs here, on text.

By hand, per device, shard_map over 8 devices, 256 float32 = 1,024 B each:
  psum: payload 1,024 B; wire 2·7/8·1,024 = 1,792 B; reduction FLOPs 7/8·256 = 224
  all_gather: output 8·1,024 = 8,192 B; wire 7/8·8,192 = 7,168 B
  psum_scatter: wire 7/8·1,024 = 896 B; FLOPs 224;  ppermute: wire 1,024 B;  all_to_all: 896 B
"""

from __future__ import annotations

import pytest

from ._mesh import run_programs

jax = pytest.importorskip("jax")

from neural_cost import Operation  # noqa: E402
from neural_cost.adapters._jax.compiled import Executable  # noqa: E402
from neural_cost.adapters._jax.hlo_text import collective_group_size, parse_hlo  # noqa: E402
from neural_cost.adapters._jax.program import read_kernels  # noqa: E402
from neural_cost.adapters._jax.walker import Walker  # noqa: E402

PROGRAMS = r"""
from jax.experimental import roofline

def rows(trace):
    return [
        {"name": op.name, "kind": op.kind, "attrs": {k: v for k, v in op.attrs.items() if k != "function"},
         "inputs": [list(s) for s in op.inputs], "output": list(op.output), "count": op.count,
         "payload": op.cost.payload_bytes, "wire": op.cost.wire_bytes, "flops": op.cost.flops}
        for op in trace.operations
    ]

def summary(trace):
    return {"rows": rows(trace), "wire": estimate_trace(trace).wire_bytes, "notes": list(trace.notes),
            "coverage": [trace.coverage.modeled, trace.coverage.free, list(map(list, trace.coverage.unmodeled))],
            "kernels": [[k.name, k.kind, list(k.operations), dict(k.flops_by_dtype)] for k in trace.kernels]}

mesh = Mesh(np.array(jax.devices()), ("x",))
x = jnp.arange(2048, dtype=jnp.float32)  # 256 float32 per device
ring = [(i, (i + 1) % 8) for i in range(8)]

def body(v):
    return (lax.psum(v, "x"), lax.all_gather(v, "x"), lax.psum_scatter(v, "x", tiled=True),
            lax.ppermute(v, "x", ring), lax.all_to_all(v, "x", 0, 0, tiled=True), lax.pmax(v, "x"),
            lax.pmin(v, "x"), lax.axis_index("x").reshape(1))

specs = (P(), P("x"), P("x"), P("x"), P("x"), P(), P(), P("x"))
sharded = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=specs)
out["shard_map"] = summary(JaxAdapter(cross_check=True).trace(sharded, x))
_, result = roofline.roofline(lambda v: lax.psum(v, "x"), mesh, in_specs=P("x"), out_specs=P())(x)
out["roofline_psum_ici_bytes"] = dict(result.ici_bytes)

mesh2 = Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))
def body2(v):
    return lax.psum(v, "b"), lax.psum(v, ("a", "b")), lax.all_gather(v, "b", tiled=True), lax.pbroadcast(v, "b", 0)
grid = jax.shard_map(body2, mesh=mesh2, in_specs=P(("a", "b")), out_specs=(P("a"), P(), P(("a", "b")), P(("a", "b"))))
out["mesh_2x4"] = summary(JaxAdapter().trace(grid, x))  # pbroadcast has no CPU lowering: no compile
replicated = jax.shard_map(lambda v: lax.psum(v * 2.0, "a"), mesh=mesh2, in_specs=P(), out_specs=P())
out["pvary"] = summary(JaxAdapter().trace(replicated, jnp.ones((256,), jnp.float32)))
out["pmap"] = summary(JaxAdapter().trace(jax.pmap(lambda v: lax.psum(v, "i"), axis_name="i"), jnp.ones((8, 256))))

params = (put((D, H), P()), put((H, O), P()))
dp = JaxAdapter(cross_check=True)
out["data_parallel"] = summary(dp.trace(step, (params, put((B, D), P("x")), put((B, O), P("x")))))
hlo = dp.executables._entries[-1].compiled.as_text()
out["data_parallel"]["hlo_collectives"] = [
    hlo.count(f" {opcode}(") for opcode in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")]
tp = (put((D, H), P(None, "x")), put((H, O), P("x", None)), put((B, D), P()))
out["tensor_parallel"] = summary(JaxAdapter(cross_check=True).trace(mlp, tp))
"""


@pytest.fixture(scope="module")
def measured():
    return run_programs(PROGRAMS)


def _by_name(summary):
    return {row["name"]: row for row in summary["rows"]}


# -- shard_map: from the jaxpr, per device --------------------------------------------------


def test_shard_map_collectives_per_device(measured):
    rows = _by_name(measured["shard_map"])
    got = {
        name: (row["attrs"]["collective"], row["attrs"]["group_size"], row["payload"], row["wire"], row["flops"])
        for name, row in rows.items()
    }
    assert got == {
        # name: (collective, n, payload, wire, reduction FLOPs) — derived in the module docstring
        "psum_invariant": ("all_reduce", 8, 1_024, 1_792, 224),
        "all_gather": ("all_gather", 8, 1_024, 7_168, 0),  # its output: (8, 256) float32 = 8,192 B
        "reduce_scatter": ("reduce_scatter", 8, 1_024, 896, 224),
        "ppermute": ("permute", 8, 1_024, 1_024, 0),
        "all_to_all": ("all_to_all", 8, 1_024, 896, 0),
        "pmax": ("all_reduce", 8, 1_024, 1_792, 224),  # a max per element received: 7/8 · 256 comparisons
        "pmin": ("all_reduce", 8, 1_024, 1_792, 224),
    }
    assert rows["all_gather"]["output"] == [8, 256] and rows["reduce_scatter"]["output"] == [32]
    assert all(row["attrs"]["axis"] == "x" and row["inputs"] == [[256]] for row in rows.values())
    # 1,792·3 + 7,168 + 896 + 1,024 + 896 = 15,360 B sent per device
    assert measured["shard_map"]["wire"] == 15_360
    # 7 collectives modeled; the shard_map call and axis_index free (the reshape of a scalar too); none unmodeled
    modeled, _free, unmodeled = measured["shard_map"]["coverage"]
    assert (modeled, unmodeled) == (7, [])


def test_psum_wire_bytes_match_jax_roofline(measured):
    # jax.experimental.roofline's ICI bytes for the same psum: an independent count of the ring
    assert measured["roofline_psum_ici_bytes"] == {"x": 1_792}
    assert _by_name(measured["shard_map"])["psum_invariant"]["wire"] == 1_792


def test_shard_map_collectives_are_not_counted_twice_from_the_hlo(measured):
    # the HLO's all-reduce, all-gather... carry the primitive in op_name: they add no record
    names = [row["name"] for row in measured["shard_map"]["rows"] if row["kind"] == "collective"]
    expected = ["psum_invariant", "all_gather", "reduce_scatter", "ppermute", "all_to_all", "pmax", "pmin"]
    assert sorted(names) == sorted(expected)


def test_group_size_from_the_mesh_axes_named(measured):
    # 2x4 mesh, 2048 float32 over 8 devices = 256 per device (1,024 B)
    rows = measured["mesh_2x4"]["rows"]
    psum_b, psum_ab = (row for row in rows if row["name"] == "psum_invariant")
    assert (psum_b["attrs"]["group_size"], psum_b["wire"], psum_b["flops"]) == (4, 1_536, 192)  # 2·3/4·1,024; 3/4·256
    assert (psum_ab["attrs"]["group_size"], psum_ab["attrs"]["axis"], psum_ab["wire"]) == (8, "a,b", 1_792)
    gather = _by_name(measured["mesh_2x4"])["all_gather"]
    assert (gather["attrs"]["group_size"], gather["output"], gather["wire"]) == (4, [1024], 3_072)  # 3/4·4,096
    broadcast = _by_name(measured["mesh_2x4"])["pbroadcast"]
    assert broadcast["attrs"]["collective"] == "broadcast"
    assert (broadcast["attrs"]["group_size"], broadcast["wire"]) == (4, 768)  # 3/4·1,024


def test_pvary_is_free_and_pmap_runs_over_its_axis(measured):
    psum = _by_name(measured["pvary"])["psum_invariant"]
    assert (psum["attrs"]["group_size"], psum["payload"], psum["wire"]) == (2, 1_024, 1_024)  # 2·1/2·1,024
    assert measured["pvary"]["coverage"][2] == []
    pmap_psum = _by_name(measured["pmap"])["psum"]  # pmap traces to a shard_map over its axis
    assert (pmap_psum["attrs"]["group_size"], pmap_psum["inputs"], pmap_psum["wire"]) == (8, [[256]], 1_792)


def test_a_collective_of_unknown_group_size_is_unmodeled_by_name():
    jnp = pytest.importorskip("jax.numpy")
    lax = pytest.importorskip("jax.lax")
    # an axis environment outside any shard_map: no mesh says how wide "x" is
    closed = jax.make_jaxpr(lambda v: lax.psum(v, "x"), axis_env=[("x", 8)])(jnp.ones(256))
    state = Walker({}, 8).run(closed)
    assert dict(state.unmodeled) == {"psum": 1} and state.operations == []
    assert any("psum over mesh axes 'x'" in note and "unmodeled" in note for note in state.notes)


# -- jit with shardings: the partitioner's collectives, from the HLO --------------------------


def test_data_parallel_gradient_all_reduce(measured):
    summary = measured["data_parallel"]
    added = [row for row in summary["rows"] if row["kind"] == "collective"]
    assert summary["hlo_collectives"] == [1, 0, 0, 0]  # XLA combined both gradients into one all-reduce
    (all_reduce,) = added
    # the gradients: w1 32·64 + w2 64·16 = 3,072 float32 = 12,288 B, each device's whole copy
    assert all_reduce["inputs"] == [[64, 32], [16, 64]] and all_reduce["payload"] == 12_288
    assert (all_reduce["attrs"]["group_size"], all_reduce["count"]) == (8, 1)
    assert all_reduce["wire"] == 21_504  # 2·7/8·12,288
    assert all_reduce["flops"] == 2_688  # 7/8·3,072 additions
    assert summary["wire"] == 21_504
    index = len(summary["rows"]) - 1  # appended after the jaxpr's records; its kernel owns it
    (kernel,) = [k for k in summary["kernels"] if index in k[2]]
    assert kernel[1] == "all-reduce" and kernel[2] == [index] and kernel[3] == {"float32": 2_688}
    assert (
        "partitioned over 8 devices: records are one device's share, shapes read from the partitioned HLO"
        in (summary["notes"])
    )


def test_tensor_parallel_activation_all_reduce(measured):
    summary = measured["tensor_parallel"]
    (all_reduce,) = [row for row in summary["rows"] if row["kind"] == "collective"]
    # w1 column-sharded, w2 row-sharded: each device holds a partial (256, 16) product, summed once
    assert all_reduce["inputs"] == [[256, 16]] and all_reduce["payload"] == 16_384  # 256·16·4
    assert (all_reduce["wire"], all_reduce["flops"]) == (28_672, 3_584)  # 2·7/8·16,384; 7/8·4,096
    # the dot_general the all-reduce's op_name names stays with its fusion
    dot = next(i for i, row in enumerate(summary["rows"]) if row["name"] == "dot_general")
    assert [k[1] for k in summary["kernels"] if dot in k[2]] == ["fusion"]


# -- replica groups and asynchronous collectives, on text ---------------------------------------


@pytest.mark.parametrize(
    ("opcode", "attributes", "size"),
    [
        ("all-reduce", "channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true", 8),
        ("all-reduce", "channel_id=1, replica_groups={{0,2,4,6},{1,3,5,7}}, use_global_device_ids=true", 4),
        ("all-reduce", "channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true", 4),
        ("all-gather", "channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}", 2 * 8),  # × partitions
        ("all-reduce", "channel_id=1, replica_groups=mesh['axis_0'=8,'axis_1'=1] {'axis_0'}, to_apply=%add", 8),
        ("all-reduce", "channel_id=1, replica_groups=mesh['axis_0'=1,'axis_1'=8] {'axis_1'}", 8),
        ("reduce-scatter", "replica_groups=mesh['a'=2,'b'=4] {'a','b'}, use_global_device_ids=true", 8),
        ("all-reduce", "replica_groups=mesh['a'=2,'b'=4], device_ids=(7,6,5,4,3,2,1,0) {'b':(1)2}", 2),
        ("all-reduce", "replica_groups=maximal_mesh[device_id=0] {}", 1),
        ("all-to-all", "channel_id=1, replica_groups={}, dimensions={0}", 8),  # every partition
        ("all-reduce", "replica_groups={}, to_apply=%add", 1),  # every replica (one)
        ("collective-permute", "channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}", 4),
        ("all-reduce-start", "channel_id=3, replica_groups=[1,8]<=[8], use_global_device_ids=true", 8),
        ("all-reduce", "channel_id=1, to_apply=%add", None),
    ],
)
def test_replica_groups_in_every_syntax(opcode, attributes, size):
    assert collective_group_size(opcode, attributes, partitions=8, replicas=1) == size


ASYNC = "\n".join(
    [
        "HloModule jit_f, is_scheduled=true, num_partitions=4",
        "",
        "%add (a: f32[], b: f32[]) -> f32[] {",
        "  %a = f32[] parameter(0)",
        "  %b = f32[] parameter(1)",
        "  ROOT %sum = f32[] add(%a, %b)",
        "}",
        "",
        "%wrapped_all_to_all (p: bf16[64,32]) -> bf16[64,32] {",
        "  %p = bf16[64,32]{1,0} parameter(0)",
        "  ROOT %a2a = bf16[64,32]{1,0} all-to-all(%p), channel_id=4, replica_groups={{0,1,2,3}}, dimensions={0}",
        "}",
        "",
        "ENTRY %main (x: f32[128,32], y: bf16[64,32]) -> (f32[512,32], f32[128,32], bf16[64,32]) {",
        "  %x = f32[128,32]{1,0} parameter(0)",
        "  %y = bf16[64,32]{1,0} parameter(1)",
        "  %ag-start = (f32[128,32]{1,0}, f32[512,32]{1,0}) all-gather-start(%x), channel_id=1, "
        "replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true, "
        'metadata={op_name="jit(f)/layer/dot_general"}',
        "  %ag-done = f32[512,32]{1,0} all-gather-done(%ag-start)",
        "  %ar-start = f32[128,32]{1,0} all-reduce-start(%x), channel_id=2, replica_groups={{0,1},{2,3}}, "
        "use_global_device_ids=true, to_apply=%add",
        "  %ar-done = f32[128,32]{1,0} all-reduce-done(%ar-start)",
        "  %a2a-start = ((bf16[64,32]{1,0}), bf16[64,32]{1,0}) async-start(%y), calls=%wrapped_all_to_all",
        "  %a2a-done = bf16[64,32]{1,0} async-done(%a2a-start)",
        "  %psum = f32[128,32]{1,0} all-reduce(%x), channel_id=5, replica_groups={{0,1,2,3}}, "
        'use_global_device_ids=true, to_apply=%add, metadata={op_name="jit(f)/shard_map/psum_invariant"}',
        "  %odd = f32[128,32]{1,0} all-reduce(%x), channel_id=6, to_apply=%add",
        "  ROOT %t = (f32[512,32]{1,0}, f32[128,32]{1,0}, bf16[64,32]{1,0}) tuple(%ag-done, %ar-done, %a2a-done)",
        "}",
    ]
)


def test_asynchronous_collectives_and_what_gets_no_record():
    assert parse_hlo(ASYNC).partitions == 4
    # the all-gather carries this dot's op_name and its output size, yet does not compute it
    dot = Operation("dot_general", "matmul", ((512, 16), (16, 32)), (512, 32), "float32", scope="layer")
    program = read_kernels(Executable(None, None, ASYNC, 0.0), (dot,), (), 8)
    rows = {op.attrs["op"]: op for op in program.operations}
    assert list(rows) == ["ag-start", "ar-start", "a2a"]  # the shard_map psum has its jaxpr record; %odd no group
    assert any("1 record(s) match no kernel" in note for note in program.notes)
    gather, reduce, to_all = rows["ag-start"], rows["ar-start"], rows["a2a"]
    # all-gather: in f32[128,32] = 16,384 B, out (its -done) f32[512,32] = 65,536 B; wire 3/4·65,536
    assert (gather.name, gather.output) == ("all-gather", (512, 32))
    assert (gather.cost.payload_bytes, gather.cost.wire_bytes) == (16_384, 49_152)
    assert gather.scope == "layer"  # the scope of the op_name it carries; not the dot's record
    # all-reduce in groups of 2: wire 2·1/2·16,384; 1/2·4,096 additions
    assert (reduce.attrs["group_size"], reduce.cost.wire_bytes, reduce.cost.flops) == (2, 16_384, 2_048)
    # the all-to-all an async-start wraps: bf16[64,32] = 4,096 B, 3/4 of it sent
    assert (to_all.dtype, to_all.attrs["group_size"], to_all.cost.wire_bytes) == ("bfloat16", 4, 3_072)
    owners = {k.name: k.operations for k in program.kernels}
    assert owners["ag-start"] == (1,) and owners["ar-start"] == (2,) and owners["a2a-start"] == (3,)  # after the dot
    unmodeled = {k.name: k.unmodeled for k in program.kernels}
    assert unmodeled["odd"] == ("all-reduce",) and unmodeled["psum"] == ()
    assert any("odd (all-reduce): its group or shapes cannot be read" in note for note in program.notes)
    assert any("partitioned over 4 devices" in note for note in program.notes)
