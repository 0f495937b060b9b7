"""Kernels of a compiled JAX program, read from its optimized HLO, with our records mapped on.

Arrays are ``jax.ShapeDtypeStruct``s: compiling needs shapes only, so the 64 MiB programs of
issue 14's must-show allocate nothing.
"""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = pytest.importorskip("jax.lax")

from neural_cost import AdapterError  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.adapters._jax.hlo import compiled_kernels, hlo_text  # noqa: E402
from neural_cost.adapters._jax.hlo_map import parse_op_name  # noqa: E402
from neural_cost.adapters._jax.hlo_text import parse_hlo, shape_bytes  # noqa: E402

MiB = 2**20
X = jax.ShapeDtypeStruct((16 * MiB,), jnp.float32)  # 16 Mi float32 elements = 64 MiB


def chain(v):
    return jnp.sin(v) * 2 + 1


def kernels_of(fn, args, donate=(), adapter=None, **options):
    compiled = jax.jit(fn, donate_argnums=donate).lower(*args).compile()
    trace = (adapter or JaxAdapter(cross_check=False)).trace(fn, args)
    return compiled, trace, compiled_kernels(compiled, trace.operations, loops=trace.loop_assumptions, **options)


def total_flops(trace):
    return sum(op.cost.flops * op.count for op in trace.operations)


def mapped_flops(trace, result):
    return sum(k.flops for k in result.kernels) + sum(
        trace.operations[i].cost.flops * trace.operations[i].count for i in result.unmapped
    )


def assert_partition(trace, result):
    """Every record lands in exactly one kernel or in ``unmapped``."""
    placed = [i for k in result.kernels for i in k.operations] + list(result.unmapped)
    assert sorted(placed) == list(range(len(trace.operations)))


def test_three_elementwise_ops_are_one_kernel_moving_input_plus_output():
    _compiled, trace, result = kernels_of(chain, (X,))
    (kernel,) = result.kernels
    assert kernel.kind == "fusion" and kernel.executions == 1
    assert kernel.traffic_bytes == 128 * MiB  # 64 MiB read + 64 MiB written, not 3× the intermediates
    assert kernel.footprint_bytes == 128 * MiB
    assert [trace.operations[i].name for i in kernel.operations] == ["sin", "mul", "add"]
    assert kernel.flops == 50_331_648  # 3 ops × 1 FLOP × 16,777,216 elements
    assert kernel.source is not None and kernel.source.startswith("test_hlo_kernels.py:")


def _loop(v):
    return lax.fori_loop(0, 10, lambda i, a: chain(a), v)


def _big(result):
    return [k for k in result.kernels if k.traffic_bytes >= 64 * MiB]


def test_fori_loop_body_runs_ten_times_and_the_undonated_carry_is_copied_once():
    compiled, trace, result = kernels_of(_loop, (X,))
    copy, fusion = _big(result)
    assert (copy.kind, copy.executions, copy.traffic_bytes) == ("copy", 1, 128 * MiB)  # XLA's entry copy of x
    assert (fusion.kind, fusion.executions, fusion.traffic_bytes) == ("fusion", 10, 128 * MiB)
    assert fusion.total_traffic_bytes == 1_280 * MiB  # 10 × (64 MiB in + 64 MiB out)
    # The scalar counter: a 4-byte copy of its start (4 in + 4 out = 8 B), its increment
    # (s32 + s32 → s32: 12 B) 10 times; its compare (s32, s32 → pred: 9 B) never runs: XLA
    # knows the trip count and runs the loop without its condition (the profiler shows none).
    small = sorted((k.traffic_bytes, k.executions) for k in result.kernels if k.traffic_bytes < 64 * MiB)
    assert small == [(8, 1), (9, 0), (12, 10)]
    assert result.traffic_bytes == 1_408 * MiB + 8 + 120
    assert result.loops[0][1:3] == (10, "known_trip_count")
    # XLA's own cost_analysis counts the loop body once: 64 MiB copy read + written, 128 MiB body.
    xla_bytes = compiled.cost_analysis()["bytes accessed"]
    assert int(xla_bytes) // MiB == 256  # beside our 1,408 MiB
    assert mapped_flops(trace, result) == total_flops(trace) == 503_316_490  # 10 × 50,331,648 + 10 counter adds
    assert_partition(trace, result)


def test_donated_carry_is_not_copied():
    compiled, _trace, result = kernels_of(_loop, (X,), donate=0)
    (fusion,) = _big(result)
    assert (fusion.executions, fusion.total_traffic_bytes) == (10, 1_280 * MiB)
    assert not [k for k in result.kernels if k.kind == "copy" and k.traffic_bytes >= 64 * MiB]
    assert result.traffic_bytes == 1_280 * MiB + 8 + 120  # only the counter's scalars beside it
    assert int(compiled.cost_analysis()["bytes accessed"]) // MiB == 128  # XLA: the body once


def _traced_bound(v, n):
    return lax.fori_loop(0, n, lambda i, a: chain(a), v)


def test_traced_trip_count_comes_from_the_walker_or_a_callback():
    args = (X, jax.ShapeDtypeStruct((), jnp.int32))
    _compiled, trace, result = kernels_of(_traced_bound, args, adapter=JaxAdapter(trip_counts={"while_0": 5}))
    (_copy, fusion) = _big(result)
    assert fusion.executions == 5  # no known_trip_count: trip_counts={"while_0": 5} through the trace
    assert result.loops[0][1:] == (5, "explicit", "while_0")
    assert mapped_flops(trace, result) == total_flops(trace)
    compiled = jax.jit(_traced_bound).lower(*args).compile()
    by_callback = compiled_kernels(compiled, trip_count=lambda loop: 7 if loop.known_trip_count is None else None)
    assert _big(by_callback)[1].executions == 7 and by_callback.loops[0][2] == "callback"
    defaulted = compiled_kernels(compiled, default_trip_count=3)
    assert _big(defaulted)[1].executions == 3
    assert "has no known trip count" in defaulted.notes[0] and "default_trip_count" in defaulted.notes[0]


def mlp(x, w1, w2):
    with jax.named_scope("layer1"):
        h = jax.nn.relu(x @ w1 + 1.0)
    with jax.named_scope("layer2"):
        return jnp.tanh(h @ w2)


MLP_ARGS = (
    jax.ShapeDtypeStruct((32, 64), jnp.float32),
    jax.ShapeDtypeStruct((64, 128), jnp.float32),
    jax.ShapeDtypeStruct((128, 16), jnp.float32),
)


def test_mlp_dot_kernels_carry_the_dot_general_records():
    _compiled, trace, result = kernels_of(jax.jit(mlp), MLP_ARGS)
    dots = {}
    for kernel in result.kernels:
        for i in kernel.operations:
            if trace.operations[i].name == "dot_general":
                dots[trace.operations[i].scope] = (kernel.flops, kernel.scopes)
    assert dots == {
        "layer1": (524_288, ("layer1",)),  # 2·32·64·128
        "layer2": (131_072, ("layer2",)),  # 2·32·128·16
    }
    # 524,288 + 4,096 (bias add) + 4,096 (relu) + 131,072 + 512 (tanh), to the FLOP
    assert mapped_flops(trace, result) == total_flops(trace) == 664_064
    assert result.unmapped == ()
    assert_partition(trace, result)


def moe_layer(x, w, sizes):
    router = x @ jnp.ones((x.shape[1], 3))  # a dot of its own, beside the experts'
    return lax.ragged_dot(x, w, sizes) + router.sum()


def test_xla_cpu_runs_a_ragged_dot_densely_and_the_kernel_carries_its_record():
    """XLA:CPU lowers ``lax.ragged_dot`` to a dot of every group over a masked copy of x (its op_name says
    ``dot_general``): the kernel carries the ``grouped_matmul`` record, and computes G times its FLOPs."""
    args = (
        jax.ShapeDtypeStruct((16, 8), jnp.float32),
        jax.ShapeDtypeStruct((3, 8, 6), jnp.float32),
        jax.ShapeDtypeStruct((3,), jnp.int32),
    )
    _compiled, trace, result = kernels_of(moe_layer, args)
    (ragged,) = [i for i, op in enumerate(trace.operations) if op.kind == "grouped_matmul"]
    (kernel,) = [kernel for kernel in result.kernels if ragged in kernel.operations]
    assert trace.operations[ragged].cost.flops == 1_536  # 2 · 16 · 8 · 6
    assert kernel.compiled_flops == 3 * 1_536  # the dense form: 2 · 16 · (3 · 8) · 6 = 4,608
    router = next(i for i, op in enumerate(trace.operations) if op.name == "dot_general")
    assert router not in kernel.operations


def elman(h, xs, wx, wh):
    def step(h, x):
        return jnp.tanh(x @ wx + h @ wh), None  # two dots on one line, both (8, 512)

    return lax.scan(step, h, xs)[0]


ELMAN_ARGS = (
    jax.ShapeDtypeStruct((8, 512), jnp.float32),
    jax.ShapeDtypeStruct((16, 8, 256), jnp.float32),
    jax.ShapeDtypeStruct((256, 512), jnp.float32),
    jax.ShapeDtypeStruct((512, 512), jnp.float32),
)


def test_dots_of_one_line_and_output_size_map_to_their_own_kernels():
    """``x @ wx + h @ wh``: one key, one line, one output size (8, 512). XLA:CPU schedules the
    carry's dot first; given in program order the records swapped kernels (the 2·8·256·512-FLOP
    record on the kernel that multiplies by the 512×512 ``wh``). Each kernel's
    operands are now matched to its record's inputs."""
    compiled, trace, result = kernels_of(elman, ELMAN_ARGS)
    text = hlo_text(compiled)
    by_operand = {}
    for kernel in result.kernels:
        dots = [trace.operations[i] for i in kernel.operations if trace.operations[i].name == "dot_general"]
        for op in dots:
            weight = op.inputs[1]
            by_operand[weight] = kernel.flops
            # the kernel's own instruction reads that weight: its operand shape is in the text
            line = next(line for line in text.splitlines() if f"%{kernel.name} = " in line)
            called = line.split("calls=%")[1].split(",")[0] if "calls=%" in line else None
            body = text.split(f"%{called} ")[1].split("}\n")[0] if called else line
            assert f"f32[{weight[0]},{weight[1]}]" in body
    # per step 2·8·256·512 and 2·8·512·512 FLOPs, 16 steps
    assert by_operand == {(256, 512): 2 * 8 * 256 * 512 * 16, (512, 512): 2 * 8 * 512 * 512 * 16}
    assert_partition(trace, result)


def test_gradient_flops_are_kept_to_the_flop():
    def loss_grad(x, w1, w2):
        return jax.grad(lambda a: mlp(a, w1, w2).sum())(x)

    _compiled, trace, result = kernels_of(loss_grad, MLP_ARGS)
    assert mapped_flops(trace, result) == total_flops(trace)
    # The forward sum's value is never used by the gradient: XLA removes it, and its record is
    # unmapped (counted, named), never dropped.
    assert {trace.operations[i].name for i in result.unmapped} <= {"reduce_sum", "broadcast_in_dim"}
    dot_records = [i for i, op in enumerate(trace.operations) if op.name == "dot_general"]
    assert not set(dot_records) & set(result.unmapped)  # all four matmuls sit in kernels
    assert_partition(trace, result)


def dense_pair_loss(params, x):
    h = jnp.tanh(jnp.einsum("btd,df->btf", x, params["w1"]) + params["b1"])
    y = jnp.einsum("btf,fd->btd", h, params["w2"]) + params["b2"]
    return jnp.square(x + y).sum()


DENSE_PAIR_ARGS = (
    {
        "w1": jax.ShapeDtypeStruct((64, 256), jnp.float32),
        "b1": jax.ShapeDtypeStruct((256,), jnp.float32),
        "w2": jax.ShapeDtypeStruct((256, 64), jnp.float32),
        "b2": jax.ShapeDtypeStruct((64,), jnp.float32),
    },
    jax.ShapeDtypeStruct((4, 32, 64), jnp.float32),
)


def test_each_matmul_of_a_gradient_sits_in_the_kernel_that_runs_it():
    """Two dense layers on (batch, time, features) inputs and their weight gradients, as a Flax
    ``Dense`` stack's training step has them. XLA folds each weight gradient's transpose into its
    dot and names the dot after the transpose (``.../transpose``), and the bias-add fusions
    bitcast the forward dots' results under the dots' names. Records were given in program order
    to whatever carried their key: both weight-gradient dots read 0 FLOPs (their transposes'
    records), while the forward kernels and a bias-add held two matmuls each (a Flax transformer's
    weight-gradient dots read 117× their bound). Now a bitcast never takes a contraction's
    record, and a dot holds the dot's key before the one it was named by."""

    def step(params, x):
        return jax.grad(dense_pair_loss)(params, x)

    _compiled, trace, result = kernels_of(step, DENSE_PAIR_ARGS)
    names = [[trace.operations[i].name for i in k.operations] for k in result.kernels]
    holding = [k for k, held in zip(result.kernels, names, strict=True) if "dot_general" in held]
    # five matmuls: two forward, the hidden layer's input gradient, two weight gradients (x was
    # not differentiated); each (4·32)×64×256 = 2·128·64·256 = 4,194,304 FLOPs, one per kernel
    assert [held.count("dot_general") for held in names if "dot_general" in held] == [1] * 5
    assert all(k.flops == 4_194_304 for k in holding)
    # each runs a contraction: XLA:CPU's dot instruction, or its YNNPACK fusion of one
    assert all(k.kind == "dot" or k.name.startswith("ynn_fusion") for k in holding)
    assert all(k.flops for k in result.kernels if k.kind == "dot")
    assert mapped_flops(trace, result) == total_flops(trace)
    assert_partition(trace, result)


def test_flax_convnet_gradient_maps_nearly_all_flops_to_named_kernels():
    nn = pytest.importorskip("flax.linen")

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(16, (3, 3))(x))
            x = nn.gelu(nn.LayerNorm()(nn.Conv(16, (3, 3))(x)))
            return nn.Dense(8)(x.mean((1, 2)))

    net = Net()
    image = jnp.ones((4, 16, 16, 3))
    params = net.init(jax.random.PRNGKey(0), image)
    grad = jax.grad(lambda p, x: net.apply(p, x).sum())
    _compiled, trace, result = kernels_of(grad, (params, image))
    named = sum(k.flops for k in result.kernels if k.scopes)
    share = named / total_flops(trace)
    print(f"FLOPs in kernels with a scope: {share:.2%}")
    assert share >= 0.95
    assert mapped_flops(trace, result) == total_flops(trace)
    convolutions = [k for k in result.kernels if k.kind == "convolution"]
    assert all(len(k.operations) >= 1 for k in convolutions)  # XLA's metadata-less backward convs too
    assert_partition(trace, result)


@pytest.mark.parametrize(
    ("op_name", "expected"),
    [
        # a dot holds ragged_dot_general's key too: XLA:CPU lowers a ragged dot to a dense one of that name
        ("jit(f)/jit(main)/layer1/dot_general", ("layer1", ("dot_general", "ragged_dot_general", "main", "f"))),
        ("jit(f)/transpose(jvp(layer1))/mul", ("layer1", ("mul", "f"))),
        ("jit(f)/jvp()/sin", (None, ("sin", "f"))),
        ("jit(g)/while/body/closed_call/cell/sin", ("cell", ("sin", "g"))),
        ("jit(g)/while/cond/lt", (None, ("lt", "g"))),
        ("jit(f)/cond/branch_1_fun/mul", (None, ("mul", "f"))),
        ("jit(f)/M/Dense_0/jit(relu)/max", ("M/Dense_0", ("max", "relu", "f"))),
        ("jit(f)/checkpoint/cos", (None, ("cos", "f"))),
        ("jit(f)/layer1/jit(relu)", ("layer1", ("relu", "f"))),
    ],
)
def test_op_names_read_back_into_record_keys(op_name, expected):
    assert parse_op_name(op_name) == expected


@pytest.mark.parametrize(
    ("shape", "nbytes"),
    [
        ("f32[1024]{0}", 4096),
        ("(s32[], f32[1024]{0})", 4 + 4096),
        ("pred[3]", 3),
        ("s4[3]", 2),  # 12 bits round up to 2 bytes
        ("f32[<=16]", 64),  # a bounded dynamic dimension at its bound
        ("bf16[2,3]{1,0:T(8,128)(2,1)}", 12),
        ("token[]", 0),
    ],
)
def test_shape_bytes(shape, nbytes):
    assert shape_bytes(shape) == nbytes


HAND_WRITTEN = """HloModule jit_h, entry_computation_layout={(f32[1024]{0}, pred[])->f32[1024]{0}}

%fused_update (param_0: f32[1024], param_1: f32[16], param_2: s32[]) -> f32[1024] {
  %param_0 = f32[1024]{0} parameter(0)
  %param_1 = f32[16]{0} parameter(1)
  %param_2 = s32[] parameter(2)
  ROOT %dus = f32[1024]{0} dynamic-update-slice(%param_0, %param_1, %param_2), metadata={op_name="h/dus"}
}

%body (arg: (s32[], f32[1024])) -> (s32[], f32[1024]) {
  %arg = (s32[], f32[1024]{0}) parameter(0)
  %i = s32[] get-tuple-element(%arg), index=0
  %buf = f32[1024]{0} get-tuple-element(%arg), index=1
  %slice = f32[16]{0} slice(f32[1024]{0} %buf), slice={[0:16]}, metadata={op_name="jit(h)/while/body/slice"}
  %update = f32[1024]{0} fusion(%buf, %slice, %i), calls=%fused_update, metadata={source_file="/model.py" source_line=7}
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[1024]{0}) tuple(%next, %update)
}

%cond (arg: (s32[], f32[1024])) -> pred[] {
  %arg = (s32[], f32[1024]{0}) parameter(0)
  %i = s32[] get-tuple-element(%arg), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%small (a: f32[1024]) -> f32[1024] {
  %a = f32[1024]{0} parameter(0)
  ROOT %neg = f32[1024]{0} negate(%a)
}

%big (a: f32[1024]) -> f32[1024] {
  %a = f32[1024]{0} parameter(0)
  %b = f32[1024]{0} multiply(%a, %a)
  ROOT %c2 = f32[1024]{0} add(%b, %a)
}

ENTRY %main (x: f32[1024], p: pred[]) -> f32[1024] {
  %x = f32[1024]{0} parameter(0)
  %zero = s32[] constant(0)
  %t0 = (s32[], f32[1024]{0}) tuple(%zero, %x)
  %w = (s32[], f32[1024]{0}) while(%t0), condition=%cond, body=%body, metadata={op_name="jit(h)/while"}
  %out = f32[1024]{0} get-tuple-element(%w), index=1
  %p = pred[] parameter(1)
  %c = f32[1024]{0} conditional(%p, %out, %out), branch_computations={%small, %big}
  ROOT %r = f32[1024]{0} copy(%c)
}
"""


def test_hand_written_module():
    module = parse_hlo(HAND_WRITTEN)
    assert module.entry == "main" and set(module.computations) >= {"body", "cond", "fused_update"}
    result = compiled_kernels(HAND_WRITTEN, trip_count=lambda loop: 3)
    rows = [(k.name, k.traffic_bytes, k.footprint_bytes, k.executions) for k in result.kernels]
    assert rows == [
        ("lt", 9, 9, 4),  # s32 + s32 → pred; the condition runs trips + 1 times
        ("slice", 64 + 64, 64 + 64, 3),  # reads the 16 floats of the f32[1024] operand it keeps, writes 16
        # In place: the f32[1024] buffer aliases the result; it reads the 64-byte update and the
        # 4-byte index and writes the 64-byte update.
        ("update", 64 + 4 + 64, 64 + 4 + 64, 3),
        # %one is a constant operand, read like any other; the result is loop-state element 0, written
        # over the buffer of %i (element 0 of the same size): footprint i/next 4 + one 4
        ("next", 12, 4 + 4, 3),
        ("neg", 8192, 8192, 0),  # the lighter branch: listed, never executed
        ("b", 3 * 4096, 2 * 4096, 1),  # multiply(a, a) passes a twice: one buffer, two reads
        ("c2", 3 * 4096, 3 * 4096, 1),
        ("r", 8192, 8192, 1),
    ]
    assert result.kernels[2].source == "model.py:7"  # source_file/source_line, where a jaxlib prints them
    assert result.loops == (("w", 3, "callback", None),)


def test_unreadable_programs_raise_adapter_errors():
    with pytest.raises(AdapterError, match="has no as_text"):
        hlo_text(object())

    class NoText:
        def as_text(self):
            raise RuntimeError("this backend prints nothing")

    with pytest.raises(AdapterError, match=r"cannot be read \(RuntimeError: this backend prints nothing"):
        hlo_text(NoText())
    with pytest.raises(AdapterError, match="not an HLO module"):
        compiled_kernels(type("Empty", (), {"as_text": lambda self: None})())
    with pytest.raises(AdapterError, match="cannot read HLO instruction"):
        compiled_kernels("HloModule m\n\nENTRY %main () -> f32[] {\n  this is not HLO\n}\n")


def _noisy_search(key, v, n):
    """A PRNG draw (XLA:CPU runs threefry's rounds as a 5-trip while loop, no loop of the trace)
    before a loop whose bound is traced: the trace's only loop, ``while_0``."""
    noisy = v + jax.random.uniform(key, v.shape)
    return lax.fori_loop(0, n, lambda i, a: chain(a), noisy)


def test_a_loop_xla_made_takes_no_trace_loop_from_the_loop_at_its_line():
    """The compiled module has two while loops: threefry's (known trip count 5, at the draw's
    line) and the fori_loop (no known count). Matched in program order, the threefry loop took
    ``while_0`` and the fori_loop matched nothing: 8 by default, not the 5 given for ``while_0``."""
    from neural_cost.adapters._jax.hlo_text import parse_hlo

    args = (jax.random.PRNGKey(0), X, jax.ShapeDtypeStruct((), jnp.int32))
    compiled, trace, result = kernels_of(_noisy_search, args, adapter=JaxAdapter(trip_counts={"while_0": 5}))
    module = parse_hlo(compiled.as_text())
    loops = [i for body in module.computations.values() for i in body if i.opcode == "while"]
    assert sorted(str(i.known_trip_count) for i in loops) == ["5", "None"]  # threefry's and ours
    assert [loop.label for loop in trace.loop_assumptions] == ["while_0"]
    assert {k.executions for k in _big(result)} == {1, 5}  # both loops' bodies 5 times, none the default 8
    assert sorted(loop[1:] for loop in result.loops) == [(5, "explicit", "while_0"), (5, "known_trip_count", None)]
    assert not [note for note in result.notes if "matches no loop" in note or "XLA knows" in note]


def test_take_loop_matches_by_source_line_else_in_program_order():
    from collections import deque

    from neural_cost.adapters._jax.loops import take_loop
    from neural_cost.core.records import LoopAssumption

    scan = LoopAssumption("scan_0", 32, "static", location="/x/mctx/search.py:111:12 (search)")
    simulate = LoopAssumption("while_0", 8, "default", location="/x/mctx/search.py:183:14 (simulate)")
    backward = LoopAssumption("while_1", 8, "default", location="/x/mctx/search.py:290:15 (backward)")
    queue = deque([scan, simulate, backward])
    assert take_loop(queue, "policies.py:184") is None and len(queue) == 3  # a loop XLA made
    assert take_loop(queue, "search.py:183") is simulate
    assert take_loop(queue, "search.py:111") is scan
    assert take_loop(queue, None) is backward and not queue  # no line: the next in program order
    unlocated = LoopAssumption("while_2", 8, "default")
    assert take_loop(deque([unlocated, scan]), "search.py:111") is unlocated  # lines missing: in order
    assert take_loop(None, "search.py:1") is None
    bracketed = LoopAssumption("while_0", 8, "default", location="/x/my (copy)/search.py:183:14 (simulate)")
    assert take_loop(deque([scan, bracketed]), "search.py:183") is bracketed  # a folder's parenthesis
    # a draw's threefry loop compiled on its scan's line: XLA knows 5 trips, the scan is static at 32
    queue = deque([scan])
    assert take_loop(queue, "search.py:111", known=5) is None and len(queue) == 1
    assert take_loop(queue, "search.py:111", known=32) is scan and not queue
    assert take_loop(deque([simulate]), "search.py:183", known=5) is simulate  # a guessed count may be wrong
    counted = LoopAssumption("while_3", 10, "inferred", location="/x/rollout.py:40:8 (rollout)")  # fori_loop(0, 10)
    assert take_loop(deque([counted]), "rollout.py:40", known=5) is None  # its body's draw, on its line
    assert take_loop(deque([counted]), "rollout.py:40", known=10) is counted


def test_a_library_op_called_at_the_top_level_maps_to_the_kernel_that_runs_it():
    """``jax.nn.softmax`` called in the jitted function itself is one record with no scope; XLA:CPU runs it (here
    with the multiply before it and the add after it) as one YNNPACK fusion. Every kernel has instructions at the
    top level, so the record goes to the one whose computing instructions no other record explains — it had been
    unmapped, its 41.9 MFLOP scored apart by the unfused rule and the coverage short. A softmax and a log_softmax
    (jitted: mapped by name) of two same-sized arrays land in two kernels."""
    x = jax.ShapeDtypeStruct((8, 1024, 1024), jnp.float32)
    _compiled, trace, result = kernels_of(lambda v: jax.nn.softmax(v * 2.0, axis=-1) + 1.0, (x,))
    assert_partition(trace, result)
    assert not result.unmapped
    (kernel,) = [k for k in result.kernels if k.operations]
    assert sorted(trace.operations[i].name for i in kernel.operations) == ["add", "mul", "softmax"]

    def two(v, w):  # two arrays of one size: XLA runs each op apart; the output sizes cannot tell them apart
        return jax.nn.softmax(v, axis=-1), jax.nn.log_softmax(w, axis=-1)

    _compiled, trace, result = kernels_of(two, (x, x))
    assert_partition(trace, result)
    assert not result.unmapped
    holders = {trace.operations[i].name: k.name for k in result.kernels for i in k.operations}
    assert set(holders) == {"softmax", "log_softmax"} and holders["softmax"] != holders["log_softmax"]


def test_attentions_scores_dot_goes_to_the_fusion_that_runs_it_without_metadata():
    """``jax.nn.dot_product_attention`` over (1, 1024, 8, 64): XLA:CPU fuses the scores' dot, q·kᵀ, with the softmax
    into one YNNPACK fusion whose ``dot`` carries no ``op_name``, and the einsum's name (the record's scope) is on no
    instruction. The scores' record — 2 × 8 × 1024 × 1024 × 64 = 1,073,741,824 FLOPs — goes to that fusion, the
    one whose contraction does its FLOPs and holds no other contraction record; the output's dot (as many FLOPs,
    named) keeps its own kernel. It had been unmapped, and the fusion, holding the softmax's records only, read
    as a reduction (an attention program of the JAX grid at 40× the reduce curve)."""
    x = jax.ShapeDtypeStruct((1, 1024, 8, 64), jnp.float32)
    _compiled, trace, result = kernels_of(lambda q, k, v: jax.nn.dot_product_attention(q, k, v), (x, x, x))
    assert_partition(trace, result)
    dots = [i for i, op in enumerate(trace.operations) if op.name == "dot_general"]
    assert [trace.operations[i].cost.flops for i in dots] == [1_073_741_824] * 2
    holders = [next(k for k in result.kernels if i in k.operations) for i in dots]
    assert holders[0].name != holders[1].name
    assert all(k.compiled_flops_by_dtype == {"float32": 1_073_741_824} for k in holders)
    scores = holders[0]
    assert {trace.operations[i].name for i in scores.operations} >= {"dot_general", "exp", "reduce_sum", "div"}
    assert not set(dots) & set(result.unmapped)


def test_top_level_library_ops_of_one_size_take_one_kernel_each_and_a_folded_primitive_none():
    """``hlo_map.assign`` on hand-made kernels: two top-level kernels whose computing instructions no record explains,
    each with one of 4 MiB (1 Mi float32) — the fit by size cannot tell them apart. A ``softmax`` record and a
    ``gelu`` record of that size (library ops matched from their equations, names no instruction carries) go one to
    each: the first's kernel counts as explained once it holds one. A primitive no instruction carries (``max``:
    XLA folded a softmax's initial value) stays unmapped, never placed on a kernel it does not name."""
    from neural_cost.adapters._jax.hlo_map import Mark, Site, assign
    from neural_cost.core.records import Operation

    def site(name, opcode_names):
        marks = [Mark(None, (n,), True, nbytes=4 * MiB) for n in opcode_names]
        return Site(name, "fusion", 8 * MiB, 8 * MiB, 1, None, result_bytes=4 * MiB, marks=marks)

    shape = (1024, 1024)
    ops = [  # the folded primitive first: it is looked at while both kernels' instructions are unexplained
        Operation("max", "elementwise", ((), (1024, 1)), (1024, 1), attrs={"op": "max"}),
        Operation("softmax", "softmax", (shape,), shape),
        Operation("gelu", "elementwise", (shape,), shape, attrs={"op": "gelu"}),
    ]
    kernels, unmapped, _ = assign([site("fusion.0", ("exp", "reduce_sum")), site("fusion.1", ("tanh", "mul"))], ops)
    assert [k.operations for k in kernels] == [(1,), (2,)]
    assert unmapped == (0,)
