"""The graph-op table on the graphs real Keras 3 models trace: exact FLOPs and bytes from the
closed forms written beside them, the free entries and their reasons, and the op types left
unmodeled on purpose."""

import os

import pytest

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost.adapters._tf.ops import EMPTY_REASONS, TABLE, Free, UnmodeledOp  # noqa: E402
from neural_cost.adapters._tf.table import TfContext  # noqa: E402

CTX = TfContext(None, 1)


def _graphs(graph):
    yield graph
    for function in graph._functions.values():
        yield from _graphs(function.graph)


def lower(fn, *specs):
    """(op type, records) for every graph op in the table, function bodies included, and the
    op types the table does not know."""
    concrete = tf.function(fn).get_concrete_function(*specs)
    lowered, missing = [], set()
    for graph in _graphs(concrete.graph):
        for op in graph.get_operations():
            entry = TABLE.get(op.type)
            if entry is None:
                missing.add(op.type)
            elif not isinstance(entry, Free):
                lowered.append((op.type, list(entry(op, CTX))))
    return lowered, missing


def of(lowered, op_type):
    """The records of every op of ``op_type``, in graph order (one list per op)."""
    return [records for kind, records in lowered if kind == op_type]


def single(lowered, op_type):
    (records,) = of(lowered, op_type)
    (record,) = records
    return record


def keras_fn(layers, shape, dtype="float32"):
    model = keras.Sequential([keras.Input(shape[1:], dtype=dtype), *layers])
    return (lambda x: model(x, training=False)), tf.TensorSpec(shape, dtype)


def test_dense_mlp():
    fn, spec = keras_fn([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2, activation="softmax")], (3, 8))
    lowered, missing = lower(fn, spec)
    assert missing == set()
    first, second = (records[0] for records in of(lowered, "MatMul"))
    assert first.cost.flops == 192  # Dense(8→4) at batch 3: 2·3·8·4
    assert first.cost.read_bytes == 224  # x 3·8 + W 8·4 floats, 4 bytes each: (24 + 32)·4
    assert first.cost.write_bytes == 48  # 3·4·4
    assert second.cost.flops == 48  # Dense(4→2): 2·3·4·2
    assert [r[0].cost.flops for r in of(lowered, "BiasAdd")] == [12, 6]  # 3·4, 3·2 adds
    assert single(lowered, "Relu").cost.flops == 12  # one max per element
    softmax = single(lowered, "Softmax")
    assert softmax.cost.flops == 24  # 3 rows of L=2: 3·(5·2-2)
    assert softmax.cost.transcendentals == 6  # one exp per element


def test_cnn_conv_batchnorm_pooling_depthwise_transposed():
    layers = [
        keras.layers.Conv2D(4, 3, padding="same"),
        keras.layers.BatchNormalization(),
        keras.layers.MaxPooling2D(),
        keras.layers.AveragePooling2D(2),
        keras.layers.DepthwiseConv2D(3),
        keras.layers.Conv2DTranspose(2, 3, strides=2),
        keras.layers.GlobalAveragePooling2D(),
    ]
    lowered, missing = lower(*keras_fn(layers, (2, 12, 12, 3)))
    assert missing == set()
    conv = single(lowered, "Conv2D")
    assert conv.inputs == ((2, 3, 12, 12), (4, 3, 3, 3)) and conv.output == (2, 4, 12, 12)  # NCHW, OIHW
    assert conv.attrs["padding"] == ((1, 1), (1, 1))  # SAME, k=3, stride 1
    assert conv.cost.flops == 62208  # 2 · (2·4·12·12 outputs) · 3 · 3·3
    # Keras 3's inference batch norm: (x·(γ·rsqrt(var+ε))) + (β - mean·γ·rsqrt): 2 ops per element
    big = [r[0] for r in of(lowered, "Mul") + of(lowered, "AddV2") if r[0].output == (2, 12, 12, 4)]
    assert sum(r.cost.flops for r in big) == 2 * 1152  # 2·12·12·4 = 1152 elements
    assert single(lowered, "Rsqrt").cost.transcendentals == 4  # one per channel
    assert single(lowered, "MaxPool").cost.flops == 864  # (2·6·6·4 = 288 outputs) · (2·2 - 1)
    assert single(lowered, "AvgPool").cost.flops == 288  # (2·3·3·4 = 72 outputs) · 2·2
    depthwise = single(lowered, "DepthwiseConv2dNative")
    assert depthwise.attrs["groups"] == 4 and depthwise.inputs[1] == (4, 1, 3, 3)
    assert depthwise.cost.flops == 144  # 2 · (2·4·1·1 outputs) · 1 · 3·3
    transposed = single(lowered, "Conv2DBackpropInput")
    assert transposed.inputs == ((2, 4, 1, 1), (4, 2, 3, 3)) and transposed.output == (2, 2, 3, 3)
    assert transposed.cost.flops == 288  # 2 · N 2 · 1·1 input positions · C_in 4 · C_out 2 · 3·3
    mean = single(lowered, "Mean")
    assert mean.cost.flops == 36  # (2,3,3,2) → (2,2): 36 - 4 adds + 4 divides


def test_conv1d_is_expand_dims_conv2d_squeeze():
    lowered, missing = lower(*keras_fn([keras.layers.Conv1D(4, 3)], (2, 10, 3)))
    assert missing == set()
    assert isinstance(TABLE["ExpandDims"], Free) and isinstance(TABLE["Squeeze"], Free)
    conv = single(lowered, "Conv2D")
    assert conv.inputs == ((2, 3, 1, 10), (4, 3, 1, 3)) and conv.output == (2, 4, 1, 8)
    assert conv.cost.flops == 1152  # 2 · (2·4·8 outputs) · 3 · 3


def test_embedding_reads_only_the_rows_it_looks_up():
    lowered, missing = lower(*keras_fn([keras.layers.Embedding(11, 6)], (2, 5), "int32"))
    assert missing == set()
    lookup = single(lowered, "GatherV2")
    assert lookup.kind == "embedding" and lookup.inputs == ((11, 6), (2, 5))
    assert lookup.cost.read_bytes == 280  # 2·5 rows of 6 floats (240) + 10 int32 indices (40)
    assert lookup.cost.write_bytes == 240


def test_resource_gather_takes_the_variable_shape_from_its_handle():
    table = tf.Variable(tf.ones((11, 6)))
    lowered, _ = lower(lambda i: tf.gather(table, i), tf.TensorSpec((2, 5), tf.int32))
    lookup = single(lowered, "ResourceGather")
    assert lookup.inputs == ((11, 6), (2, 5)) and lookup.cost.read_bytes == 280  # as above


def test_multi_head_attention():
    inputs = keras.Input((6, 8))
    model = keras.Model(inputs, keras.layers.MultiHeadAttention(2, 4)(inputs, inputs))
    lowered, missing = lower(lambda x: model(x, training=False), tf.TensorSpec((2, 6, 8)))
    assert missing == set()
    projections = [r[0].cost.flops for r in of(lowered, "BatchMatMulV2")]
    assert projections == [1536] * 4  # q, k, v, out: 2 · (2·6 tokens) · 8 · (2 heads · 4)
    scores, context = (r[0] for r in of(lowered, "Einsum"))
    assert scores.output == (2, 2, 6, 6) and scores.cost.flops == 1152  # 2 · (2·2·6·6) · head_dim 4
    assert context.cost.flops == 1152  # 2 · (2·2·6·4) · 6 keys
    assert single(lowered, "Softmax").cost.flops == 672  # 2·2·6 rows of L=6: 24·(5·6-2)


def test_layer_normalization_as_keras_decomposes_it():
    lowered, missing = lower(*keras_fn([keras.layers.LayerNormalization()], (2, 8, 4)))
    assert missing == set()
    mean, variance = (r[0] for r in of(lowered, "Mean"))
    assert mean.attrs["axes"] == (2,) or mean.attrs["axes"] == (-1,)
    assert mean.cost.flops == variance.cost.flops == 64  # 2·8 rows of 4: 3 adds + 1 divide each
    assert single(lowered, "SquaredDifference").cost.flops == 128  # 64 elements · (subtract, square)
    rsqrt = single(lowered, "Rsqrt")
    assert (rsqrt.cost.flops, rsqrt.cost.transcendentals) == (16, 16)


def test_lstm_loop_body_and_tensor_lists():
    lowered, missing = lower(*keras_fn([keras.layers.LSTM(4)], (2, 7, 3)))
    assert missing == {"While"}  # the walker's job
    from_tensor = single(lowered, "TensorListFromTensor")
    assert (from_tensor.cost.read_bytes, from_tensor.cost.write_bytes) == (168, 168)  # 7·2·3 floats
    get_item = single(lowered, "TensorListGetItem")
    assert get_item.output == (2, 3) and get_item.cost.read_bytes == 24  # one step's (2, 3) input
    set_item = single(lowered, "TensorListSetItem")
    assert set_item.output == (2, 4) and set_item.cost.write_bytes == 32  # one (2, 4) hidden state
    stack = single(lowered, "TensorListStack")
    assert stack.output == (1, 2, 4)  # return_sequences=False keeps the last step only
    kernel_matmuls = [r[0].cost.flops for r in of(lowered, "MatMul") if r[0].inputs[1] == (3, 16)]
    assert kernel_matmuls == [192, 192]  # first step and loop body: 2·2·3·(4 gates · 4)
    assert [records for records in of(lowered, "Transpose") if not records]  # (1,2,4)→(2,1,4) moves a 1


def test_explicit_padding_nchw_and_same_pooling():
    def fn(x):
        return (
            tf.nn.conv2d(x, tf.ones((3, 3, 3, 4)), 2, [[0, 0], [1, 2], [0, 1], [0, 0]]),
            tf.nn.conv2d(tf.transpose(x, [0, 3, 1, 2]), tf.ones((3, 3, 3, 4)), 1, "SAME", data_format="NCHW"),
            tf.nn.max_pool2d(x, 3, 2, "SAME"),
        )

    lowered, _ = lower(fn, tf.TensorSpec((2, 8, 8, 3)))
    explicit, nchw = (r[0] for r in of(lowered, "Conv2D"))
    assert explicit.attrs["padding"] == ((1, 2), (0, 1)) and explicit.output == (2, 4, 5, 4)
    assert explicit.cost.flops == 8640  # 2 · (2·4·5·4 outputs) · 3 · 3·3
    assert nchw.output == (2, 4, 8, 8) and nchw.cost.flops == 27648  # 2 · (2·4·8·8) · 27
    pool = single(lowered, "MaxPool")
    assert pool.attrs["padding"] == ((0, 1), (0, 1))  # SAME, k=3, stride 2 on 8: total 1, low 0
    assert pool.cost.flops == 768  # (2·3·4·4 = 96 outputs) · (9 - 1)
    assert single(lowered, "Transpose").cost.write_bytes == 1536  # a real NHWC→NCHW copy: 384 floats


def test_conv3d_and_3d_pooling():
    conv, max_pool = keras.layers.Conv3D(2, 3), keras.layers.MaxPooling3D()
    lowered, _ = lower(lambda x: (conv(x), max_pool(x)), tf.TensorSpec((1, 6, 6, 6, 3)))
    assert single(lowered, "Conv3D").cost.flops == 2 * (1 * 2 * 4 * 4 * 4) * 3 * 27  # = 20736
    assert single(lowered, "MaxPool3D").cost.flops == 81 * 7  # (1·3·3·3·3 = 81 outputs) · (8 - 1)


def test_fused_batch_norm_inference_states_affine():
    def fn(x):
        scale, offset = tf.ones(3), tf.zeros(3)
        return tf.compat.v1.nn.fused_batch_norm(x, scale, offset, offset, scale, is_training=False)[0]

    lowered, _ = lower(fn, tf.TensorSpec((2, 4, 4, 3)))
    norm = single(lowered, "FusedBatchNormV3")
    assert norm.attrs["affine"] is True and norm.inputs[0] == (2, 3, 4, 4)
    # folded as FusedBatchNorm runs it: per channel scale = γ·rsqrt(var + eps), shift = β - mean·scale
    # (5), then y = x·scale + shift (2 per element): 2·96 + 5·3 = 207 (was 390, the unfolded form)
    assert norm.cost.flops == 207


def test_batch_matmul_adjoint_and_matmul_transpose():
    def fn(a, b):
        return tf.linalg.matmul(a, b, adjoint_b=True), tf.matmul(a[0], a[0], transpose_b=True)

    lowered, _ = lower(fn, tf.TensorSpec((2, 3, 4)), tf.TensorSpec((1, 5, 4)))
    batched = single(lowered, "BatchMatMulV2")
    assert batched.inputs[1] == (1, 4, 5) and batched.cost.flops == 240  # broadcast batch 2: 2·2·3·4·5
    assert single(lowered, "MatMul").cost.flops == 72  # (3,4)·(4,3)ᵀ: 2·3·4·3


def test_einsum_it_cannot_map_is_unmodeled():
    lowered_ok, _ = lower(lambda a, b: tf.einsum("...ij,...jk->...ik", a, b), *[tf.TensorSpec((2, 3, 3))] * 2)
    assert single(lowered_ok, "Einsum").cost.flops == 108  # 2 · (2·3·3) · 3
    for equation, shapes in (("ij->j", [(3, 4)]), ("ij,jk->k", [(3, 4), (4, 5)])):
        specs = [tf.TensorSpec(s) for s in shapes]
        concrete = tf.function(lambda *xs, e=equation: tf.einsum(e, *xs)).get_concrete_function(*specs)
        ops = [op for op in concrete.graph.get_operations() if op.type == "Einsum"]
        assert ops, equation
        with pytest.raises(UnmodeledOp, match="Einsum"):
            TABLE["Einsum"](ops[0], CTX)


def test_movement_elementwise_and_random():
    def fn(x):
        return (
            tf.concat([x, x], 0),
            tf.pad(x, [[1, 1], [0, 2]]),
            x[1:3, ::2],
            tf.cast(x, tf.float16),
            tf.cast(x, tf.float32),
            tf.math.top_k(x, 3),
            tf.random.stateless_normal((3, 4), seed=(1, 2)),
            tf.add_n([x, x, x]),
            tf.math.pow(x, 3.0),
            tf.cumsum(x, axis=1),
            tf.tensor_scatter_nd_add(x, [[0], [2]], tf.ones((2, 5))),
            tf.histogram_fixed_width(x, [-1.0, 1.0], nbins=6),
        )

    lowered, missing = lower(fn, tf.TensorSpec((4, 5)))
    assert missing == set()
    assert single(lowered, "ConcatV2").cost.write_bytes == 160  # 8·5 floats
    pad = single(lowered, "Pad")
    assert (pad.cost.read_bytes, pad.cost.write_bytes) == (80, 168)  # 4·5 in, 6·7 out
    strided = [r[0] for r in of(lowered, "StridedSlice") if r and r[0].inputs[0] == (4, 5)]
    assert strided[0].cost.read_bytes == 24  # only the 2·3 elements kept
    casts = of(lowered, "Cast")
    assert [len(r) for r in casts] == [1]  # float32→float32 is not even in the graph
    assert casts[0][0].cost.write_bytes == 40  # 20 float16s
    assert single(lowered, "TopKV2").cost.flops == 32  # 4 rows · ⌈5·log2 3⌉ = 4·8
    normal = single(lowered, "StatelessRandomNormalV2")
    assert normal.cost.flops_by_dtype == {"uint32": 300, "float32": 120}  # 12·32 bits = 3 Philox blocks · 100
    assert single(lowered, "StatelessRandomGetKeyCounter").cost.flops == 100  # one Philox block
    assert single(lowered, "AddN").cost.flops == 40  # 20 elements · 2 adds
    power = single(lowered, "Pow")
    # a constant exponent 3 runs as x·Square(x) once Grappler rewrites it: 2 per element, as in PyTorch and JAX
    assert (power.cost.flops, power.cost.transcendentals, power.attrs["op"]) == (40, 0, "cube")
    assert single(lowered, "Cumsum").cost.flops == 16  # 4 rows · (5 - 1)
    histogram = single(lowered, "HistogramFixedWidth")  # 6 per value (2 clamps, the bin's 3, 1 add), range given
    assert (histogram.cost.flops, histogram.cost.read_bytes, histogram.cost.write_bytes) == (120, 80, 24)  # int32 bins
    scatter = single(lowered, "TensorScatterAdd")
    assert scatter.cost.flops == 10 and scatter.cost.write_bytes == 40  # 2 rows of 5 touched


def test_every_free_entry_has_its_reason():
    reasons = {name: entry.reason for name, entry in TABLE.items() if isinstance(entry, Free)}
    assert sorted(reasons) == sorted(
        [
            "Const", "Placeholder", "NoOp", "Identity", "IdentityN", "StopGradient", "PreventGradient",
            "ReadVariableOp", "VarHandleOp", "Shape", "ShapeN", "Size", "Rank", "EnsureShape", "Reshape",
            "Squeeze", "ExpandDims", "Bitcast", "TensorListReserve", "TensorListElementShape", "TensorListLength",
        ]
    )  # fmt: skip
    assert all(reason.strip() for reason in reasons.values())
    assert "consumes the value reads it, once" in reasons["ReadVariableOp"]
    # builders that may return no record (free for that op) say why
    assert sorted(EMPTY_REASONS) == ["BroadcastTo", "Cast", "Slice", "StridedSlice", "Transpose"]
    assert all(not isinstance(TABLE[name], Free) and reason.strip() for name, reason in EMPTY_REASONS.items())


def test_op_types_left_unmodeled_on_purpose():
    walker_handles = ["PartitionedCall", "StatefulPartitionedCall", "While", "StatelessWhile", "If", "StatelessIf"]
    not_modeled_yet = [
        "OneHot", "ScatterNd", "Where", "CumulativeLogsumexp", "Snapshot", "CheckNumerics", "MatrixBandPart",
        "UnsortedSegmentSum",
    ]  # fmt: skip
    assert not [name for name in walker_handles + not_modeled_yet if name in TABLE]


def test_table_is_a_lookup_of_builders_and_reasons():
    assert len(TABLE) > 150
    for name, entry in TABLE.items():
        assert isinstance(entry, Free) or callable(entry), name
