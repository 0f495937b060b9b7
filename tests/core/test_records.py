"""Records: validation with clear errors, the seed's positional form, exact JSON round trips."""

import json

import pytest

from neural_cost import (
    Coverage,
    DTypeError,
    LoopAssumption,
    Operation,
    RecordError,
    ShapeError,
    TensorSpec,
    Trace,
    UnknownKindError,
)
from neural_cost.core import canonical_dtype
from neural_cost.core.attrs import FrozenAttrs


def roundtrip(record):
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


def test_seed_positional_form_means_float16():
    op = Operation("classifier", "linear", ((32, 768), (768, 1000)), (32, 1000), 2)
    assert op.dtype == "float16"
    assert op.scope is None and dict(op.attrs) == {} and op.count == 1


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (1, "int8"),
        (2, "float16"),
        (4, "float32"),
        (8, "float64"),
        ("bf16", "bfloat16"),
        ("torch.bfloat16", "bfloat16"),
        ("float8_e4m3fn", "float8_e4m3fn"),
        ("half", "float16"),
    ],
)
def test_dtype_spellings(given, expected):
    assert canonical_dtype(given) == expected


def test_framework_dtype_objects_are_read_by_name():
    class FakeDType:  # numpy, jax and tensorflow dtypes all carry .name
        name = "bfloat16"

    assert canonical_dtype(FakeDType()) == "bfloat16"


def test_records_are_frozen_and_hashable():
    numbers = [[[1], [0]], [[], []]]
    op = Operation("mm", "matmul", ((2, 3), (3, 4)), (2, 4), attrs={"dimension_numbers": numbers})
    with pytest.raises(AttributeError):
        op.name = "other"  # type: ignore[misc]
    assert hash(op) == hash(Operation("mm", "matmul", ((2, 3), (3, 4)), (2, 4), attrs={"dimension_numbers": numbers}))
    assert op.attrs["dimension_numbers"] == (((1,), (0,)), ((), ()))  # lists are frozen into tuples


def test_lists_and_numpy_ints_become_plain_tuples():
    np = pytest.importorskip("numpy")
    op = Operation("mm", "matmul", [[np.int64(2), 3], [3, 4]], [2, 4])
    assert op.inputs == ((2, 3), (3, 4)) and type(op.inputs[0][0]) is int


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (
            lambda: Operation("bad", "matmul", ((2, -3), (3, 4)), (2, 4)),
            ShapeError,
            r"inputs\[0\].*negative dimension -3",
        ),
        (lambda: Operation("bad", "matmul", ((2, 3.0), (3, 4)), (2, 4)), ShapeError, r"non-integer dimension 3.0"),
        (lambda: Operation("bad", "matmul", ((2, 3), (5, 4)), (2, 4)), ShapeError, r"contracting sizes disagree"),
        (
            lambda: Operation("bad", "matmul", ((2, 3), (3, 4)), (2, 5)),
            ShapeError,
            r"output=\(2, 5\).*expected \(2, 4\)",
        ),
        (lambda: Operation("bad", "convolution", ((1,),), (1,)), UnknownKindError, r"kind='convolution'.*known kinds"),
        (lambda: Operation("bad", "matmul", ((2, 3), (3, 4)), (2, 4), "float13"), DTypeError, r"dtype='float13'"),
        (lambda: Operation("bad", "matmul", ((2, 3), (3, 4)), (2, 4), 3), DTypeError, r"dtype=3.*itemsize"),
        (lambda: Operation("bad", "matmul", ((2, 3), (3, 4)), (2, 4), count=-1), RecordError, r"count=-1"),
        (lambda: Operation("", "matmul", ((2, 3), (3, 4)), (2, 4)), RecordError, r"Operation.name=''"),
        (
            lambda: Operation("bad", "matmul", ((2, 3), (3, 4)), (2, 4), input_dtypes=("float32",)),
            RecordError,
            r"input_dtypes has 1 entries for 2 inputs",
        ),
        (lambda: Operation("bad", "elementwise", ((2,),), (2,), attrs={"x": object()}), RecordError, r"attrs\['x'\]"),
    ],
)
def test_bad_operations_raise_named_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_errors_are_value_errors_and_neural_cost_errors():
    from neural_cost import NeuralCostError

    with pytest.raises(ValueError):
        Operation("bad", "matmul", ((2, -3), (3, 4)), (2, 4))
    with pytest.raises(NeuralCostError):
        Operation("bad", "nope", (), ())


def test_operation_json_roundtrip_is_exact():
    op = Operation(
        "lookup",
        "gather",
        ((1000, 64), (3,)),
        (3, 64),
        "bfloat16",
        scope="model/embed",
        attrs={"op": "take"},
        input_dtypes=("bfloat16", "int32"),
        extra_outputs=((3,),),
        extra_output_dtypes=("int32",),
        count=16,
    )
    assert roundtrip(op) == op
    assert roundtrip(op).cost == op.cost
    # floats, None, lists and nested mappings among the attributes survive JSON exactly
    window = {"causal": True, "dropout_p": 0.1, "window": [2, -1], "sliding_window_length": None}
    attention = Operation("attn", "attention", ((1, 2, 4, 8),) * 3, (1, 2, 4, 8), attrs=window)
    fused = Operation("fused", "custom", ((4,),), (4,), attrs={"flops": {"bfloat16": 10, "int32": 2}})
    for record in (attention, fused):
        assert roundtrip(record) == record


def test_coverage_must_add_up():
    with pytest.raises(RecordError, match=r"modeled 5 \+ free 1 \+ unmodeled 3 != total 10"):
        Coverage(total=10, modeled=5, free=1, unmodeled=(("sort", 3),))


def test_coverage_fraction_ranks_unmodeled():
    coverage = Coverage(total=340, modeled=120, free=20, unmodeled=(("threefry2x32", 8), ("sort", 12), ("while", 180)))
    assert coverage.fraction == 140 / 340
    assert coverage.unmodeled == (("while", 180), ("sort", 12), ("threefry2x32", 8))
    assert roundtrip(coverage) == coverage


def test_coverage_work_entries_are_checked_ranked_and_round_trip():
    unmodeled = (("sort", 12), ("svd", 1))
    coverage = Coverage(total=20, modeled=7, unmodeled=unmodeled, unmodeled_work=[("svd", 10, 56), ("sort", 3, 4)])
    assert coverage.unmodeled_work == (("sort", 3, 4), ("svd", 10, 56))  # in the ranking's order (sort x12 first)
    assert (coverage.work_known, coverage.unmodeled_flops, coverage.unmodeled_bytes) == (True, 13, 60)
    assert roundtrip(coverage) == coverage
    # Modeled 87 FLOPs and 40 bytes: FLOP share 87 / (87 + 13) = 87%, byte share 40 / (40 + 60) = 40% → 40/100.
    assert (coverage.work_share(87, 40), coverage.work_fraction(87, 40)) == ((40, 100), 0.4)
    unsized = Coverage(total=20, modeled=7, unmodeled=unmodeled, unmodeled_work=[("svd", 10, 56)])
    assert (unsized.work_known, unsized.unmodeled_bytes, unsized.work_share(87, 40)) == (False, None, None)
    # Nothing unmodeled: all the work is modeled, even with none at all (0 / 0 is the empty program).
    assert (Coverage(total=2, modeled=1, free=1).work_share(0, 0), Coverage(total=1, modeled=1).work_share(5, 8)) == (
        (1, 1),
        (5, 5),
    )
    for entries, message in [
        ([("qr", 1, 1)], "names 'qr', which is not among the unmodeled operations"),
        ([("svd", 1, 1), ("svd", 1, 1)], "names 'svd' twice"),
        ([("svd", -1, 1)], r"FLOPs for 'svd' is -1; give an integer >= 0"),
        ([("svd", 1, True)], r"bytes for 'svd' is True; give an integer >= 0"),
        ([("svd", 1)], r"entry \('svd', 1\) must be a \(name, FLOPs, bytes\) triple"),
        ("svd", "must be a sequence of"),
    ]:
        with pytest.raises(RecordError, match=message):
            Coverage(total=20, modeled=7, unmodeled=unmodeled, unmodeled_work=entries)


def test_full_coverage_counts_executions():
    ops = [Operation("a", "elementwise", ((4,),), (4,), count=16), Operation("b", "elementwise", ((4,),), (4,))]
    coverage = Coverage.full(ops)
    assert (coverage.total, coverage.static_total, coverage.modeled, coverage.fraction) == (17, 2, 17, 1.0)


def test_trace_roundtrip_and_input_shape_forms():
    ops = (Operation("mm", "matmul", ((2, 3), (3, 4)), (2, 4)),)
    trace = Trace(
        ops,
        Coverage(total=3, modeled=1, free=1, unmodeled=(("custom_call", 1),), static_total=3, unit="equations"),
        input_shapes=[(2, 3), (3, 4)],
        loop_assumptions=(LoopAssumption("while_0", 8, "default", scope="search", location="search.py:12"),),
        framework="jax",
        boundary=(
            TensorSpec("x", (2, 3)),
            TensorSpec("w", (3, 4), role="parameter"),
            TensorSpec("y", (2, 4), role="output"),
        ),
        notes=("cond costed as its most expensive branch",),
    )
    assert trace.input_shapes == (("arg0", (2, 3)), ("arg1", (3, 4)))
    assert roundtrip(trace) == trace


def test_trace_rejects_records_when_coverage_says_nothing_was_modeled():
    ops = (Operation("mm", "matmul", ((2, 3), (3, 4)), (2, 4), count=4),)
    with pytest.raises(RecordError, match=r"1 operation records but its coverage says no operation was modeled"):
        Trace(ops, Coverage(total=1, modeled=0, free=1))
    # one executed op may lower to several records (a matmul and its bias add)
    bias = Operation("bias", "elementwise", ((2, 4), (4,)), (2, 4))
    assert Trace((*ops, bias), Coverage(total=1, modeled=1)).coverage.modeled == 1


def test_tensor_spec_validation():
    assert TensorSpec("w", (768, 1000), 2, "parameter").nbytes == 2 * 768 * 1000
    with pytest.raises(RecordError, match="role='weights'"):
        TensorSpec("w", (3,), role="weights")


def test_sub_byte_dtypes_round_up():
    assert TensorSpec("q", (3,), "int4").nbytes == 2  # 3 × 4 bits = 12 bits → 2 bytes


def test_relabeled_adds_reader_labels_without_recounting():
    # 2·8·16·4 = 1,024 FLOPs before and after: labels are for readers, never read by a rule
    op = Operation("mm", "matmul", ((8, 16), (16, 4)), (8, 4))
    labeled = op.relabeled(FrozenAttrs({"loop": "while_0", "source": "model.py:7"}))
    assert labeled.cost.flops == op.cost.flops == 1024
    assert dict(labeled.attrs) == {"loop": "while_0", "source": "model.py:7"} and dict(op.attrs) == {}
    assert Operation.from_dict(labeled.to_dict()) == labeled  # the labels round-trip like any attrs
    with pytest.raises(RecordError, match="only adds"):
        op.relabeled(FrozenAttrs({"dimension_numbers": (((1,), (0,)), ((), ()))}))
