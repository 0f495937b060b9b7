"""estimate_operations: unfused vs compulsory traffic, count multiplication, per-scope sums,
and exact JSON round-trips of Operation, Coverage, Trace and CostEstimate."""

from __future__ import annotations

import json

from neural_cost import (
    CostEstimate,
    Coverage,
    LoopAssumption,
    Operation,
    TensorSpec,
    Trace,
    estimate_operations,
    estimate_trace,
)

SHAPE = (1_024, 256)  # 262,144 float32 elements = 1,048,576 bytes per tensor


def _chain():
    # x → e = exp(x) → m = e * x → y = m + x
    return [
        Operation("exp", "elementwise", (SHAPE,), SHAPE, attrs={"transcendental": True}),
        Operation("mul", "elementwise", (SHAPE, SHAPE), SHAPE),
        Operation("add", "elementwise", (SHAPE, SHAPE), SHAPE),
    ]


def test_chain_compulsory_traffic_is_strictly_below_unfused_traffic():
    boundary = [TensorSpec("x", SHAPE, role="input"), TensorSpec("y", SHAPE, role="output")]
    estimate = estimate_operations(_chain(), boundary=boundary)
    assert estimate.read_bytes == 5_242_880  # 1 + 2 + 2 = 5 tensor reads * 1,048,576 = 5,242,880
    assert estimate.write_bytes == 3_145_728  # 3 tensor writes * 1,048,576 = 3,145,728
    assert estimate.bytes == 8_388_608  # unfused: 8 * 1,048,576
    assert estimate.compulsory_bytes == 2_097_152  # x read once + y written once: 2 * 1,048,576
    assert estimate.compulsory_bytes < estimate.bytes
    assert estimate.flops_by_dtype == {"float32": 786_432}  # 3 ops * 262,144 elements
    assert estimate.transcendentals == 262_144  # one exp per element


def test_compulsory_counts_a_boundary_tensor_once_and_is_unknown_without_a_boundary():
    x = TensorSpec("x", SHAPE, role="input")
    repeated = estimate_operations(_chain(), boundary=[x, x, TensorSpec("y", SHAPE, "bfloat16", role="output")])
    assert repeated.compulsory_bytes == 1_572_864  # x once 1,048,576 + y in bfloat16 524,288
    assert estimate_operations(_chain()).compulsory_bytes is None


def _program():
    return [
        # decoder body run 12 times
        Operation("layer", "linear", ((8, 64), (64, 64)), (8, 64), scope="decoder", count=12),
        Operation("norm", "rmsnorm", ((8, 64), (64,)), (8, 64), scope="decoder", count=12),
        Operation("head", "linear", ((8, 64), (64, 100)), (8, 100), "bfloat16", scope="head"),
        Operation("probs", "softmax", ((8, 100),), (8, 100)),
    ]


def test_count_multiplies_costs_and_scopes_sum_exactly():
    estimate = estimate_operations(_program())
    layer, norm, head, probs = estimate.by_operation
    assert layer.flops_by_dtype == {"float32": 786_432}  # 2 * 8 * 64 * 64 = 65,536 per run * 12 = 786,432
    assert layer.read_bytes == 221_184  # 4 * (512 + 4,096) = 18,432 per run * 12 = 221,184
    assert layer.write_bytes == 24_576  # 4 * 512 = 2,048 * 12 = 24,576
    assert norm.flops == 24_768  # 8 rows * (3*64 + 2 + 64 weight) = 2,064 per run * 12 = 24,768
    assert norm.transcendentals == 96  # 8 rsqrts * 12
    assert head.flops_by_dtype == {"bfloat16": 102_400}  # 2 * 8 * 64 * 100 = 102,400, once
    assert probs.flops == 3_984  # 8 rows * (5*100 - 2) = 3,984
    # totals: float32 786,432 + 24,768 + 3,984 = 815,184; bfloat16 102,400
    assert estimate.flops_by_dtype == {"bfloat16": 102_400, "float32": 815_184}
    assert estimate.flops == 917_584
    assert estimate.read_bytes == 265_856  # 221,184 + 27,648 (12 * 4 * 576) + 13,824 (2 * 6,912) + 3,200
    assert estimate.write_bytes == 53_952  # 24,576 + 24,576 + 1,600 + 3,200
    assert estimate.transcendentals == 896  # 96 + 800 exps of the softmax
    assert estimate.coverage == Coverage(total=26, modeled=26, static_total=4)  # 12 + 12 + 1 + 1 executions

    scopes = {row.scope: row for row in estimate.by_scope}
    assert set(scopes) == {"decoder", "head", "(no scope)"}
    decoder = scopes["decoder"]
    assert (decoder.operations, decoder.executions) == (2, 24)
    assert decoder.kinds == ("linear", "rmsnorm")
    assert decoder.flops_by_dtype == {"float32": 811_200}  # 786,432 + 24,768
    assert (decoder.read_bytes, decoder.write_bytes) == (248_832, 49_152)  # 221,184 + 27,648; 24,576 * 2
    assert decoder.dense_flops == 811_200
    assert scopes["head"].flops_by_dtype == {"bfloat16": 102_400}
    assert scopes["(no scope)"].flops == 3_984
    assert sum(row.flops for row in estimate.by_scope) == estimate.flops
    assert sum(row.bytes for row in estimate.by_scope) == estimate.bytes


def test_count_zero_contributes_nothing():
    op = Operation("never", "matmul", ((4, 4), (4, 4)), (4, 4), count=0)
    estimate = estimate_operations([op])
    assert (estimate.flops, estimate.bytes) == (0, 0)


# --- JSON round-trips -----------------------------------------------------------------------


def _roundtrip(record):
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


def _rich_operations():
    return [
        Operation(
            "scores",
            "matmul",
            ((2, 4, 8, 16), (2, 4, 8, 16)),
            (2, 4, 8, 8),
            "bfloat16",
            scope="attn",
            attrs={"dimension_numbers": (((3,), (3,)), ((0, 1), (0, 1))), "op": "einsum"},
        ),
        Operation(
            "topk",
            "sort",
            ((4, 10), (4, 10)),
            (4, 10),
            "float32",
            input_dtypes=("float32", "int32"),
            extra_outputs=((4, 10),),
            extra_output_dtypes=("int32",),
            count=3,
            scope="loop",
        ),
        Operation("emb", "embedding", ((100, 8), (5,)), (5, 8), "float16", input_dtypes=("float16", "int32")),
    ]


def test_operation_roundtrip_is_exact():
    for op in _rich_operations():
        back = _roundtrip(op)
        assert back == op
        assert back.cost == op.cost


def test_coverage_trace_and_estimate_roundtrip_is_exact():
    ops = _rich_operations()
    coverage = Coverage(
        total=10, modeled=5, free=2, unmodeled=(("aten.foo", 1), ("aten.bar", 2)), static_total=7, unit="aten ops"
    )
    assert _roundtrip(coverage) == coverage
    trace = Trace(
        ops,
        coverage,
        input_shapes={"tokens": (2, 8)},
        loop_assumptions=(LoopAssumption("decode loop", 3, "default", scope="loop"),),
        framework="torch",
        boundary=(TensorSpec("tokens", (2, 8), "int64"), TensorSpec("out", (4, 10), role="output")),
        notes=("hand-written",),
    )
    assert _roundtrip(trace) == trace
    estimate = estimate_trace(trace)
    back = _roundtrip(estimate)
    assert isinstance(back, CostEstimate)
    assert back == estimate
    assert back.compulsory_bytes == estimate.compulsory_bytes == 288  # tokens 16 * 8 + out 40 * 4 = 128 + 160
