"""Real JAX programs end to end: a Flax policy/value net, lookups, random numbers, gradients."""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
nn = pytest.importorskip("flax.linen")
jnp = jax.numpy

from neural_cost import HardwareSpec, analyze_gap, estimate_trace, profile_model  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402

ADAPTER = JaxAdapter(cross_check=False)
BATCH, CHANNELS, MOVES = 128, 64, 4672


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        y = nn.relu(nn.GroupNorm(num_groups=8)(nn.Conv(CHANNELS, (3, 3))(x)))
        y = nn.GroupNorm(num_groups=8)(nn.Conv(CHANNELS, (3, 3))(y))
        return nn.relu(x + y)


class PolicyValueNet(nn.Module):
    """A seed-like chess net: conv trunk with GroupNorm, a dense policy head to 4,672 moves."""

    @nn.compact
    def __call__(self, board):
        x = nn.relu(nn.GroupNorm(num_groups=8)(nn.Conv(CHANNELS, (3, 3))(board)))
        for _ in range(4):
            x = Block()(x)
        flat = x.reshape((x.shape[0], -1))
        policy = nn.Dense(MOVES)(flat)
        value = jnp.tanh(nn.Dense(1)(nn.relu(nn.Dense(64)(flat))))
        return policy, value


@pytest.fixture(scope="module")
def net_trace():
    model = PolicyValueNet()
    board = jnp.ones((BATCH, 8, 8, 8), jnp.float32)
    params = model.init(jax.random.key(0), board)
    return ADAPTER.trace(model.apply, (params, board), param_argnums=0)


def test_policy_value_net_is_fully_covered(net_trace):
    coverage = net_trace.coverage
    assert coverage.unmodeled == () and coverage.fraction == 1.0, coverage.unmodeled


def test_conv_and_dense_flops_match_their_closed_forms(net_trace):
    convs = [op for op in net_trace.operations if op.name == "conv_general_dilated"]
    stem = next(op for op in convs if op.scope.endswith("PolicyValueNet/Conv_0"))
    assert stem.cost.flops == 2 * BATCH * 8 * 8 * 8 * CHANNELS * 3 * 3  # 2·N·H·W·Cin·Cout·kh·kw (SAME padding)
    trunk = [op for op in convs if "Block" in op.scope]
    assert len(trunk) == 8 and all(op.cost.flops == 2 * BATCH * 8 * 8 * CHANNELS * CHANNELS * 3 * 3 for op in trunk)
    head = next(op for op in net_trace.operations if op.name == "dot_general" and op.scope.endswith("Dense_0"))
    assert head.cost.flops == 2 * BATCH * (8 * 8 * CHANNELS) * MOVES  # 2·B·K·N = 4,898,947,072


def test_policy_head_dense_leads_the_scope_table(net_trace):
    report = analyze_gap(
        estimate_trace(net_trace),
        __import__("neural_cost").Measurement((1e-2,) * 5, device_kind="gpu"),
        HardwareSpec("M1 GPU", 2.6e12, 68e9, kind="gpu"),
    )
    assert report.scope_rows[0].name == "PolicyValueNet/Dense_0"
    assert "PolicyValueNet/Dense_0" in report.render(group_by_scope=True).split("by share of bound:")[1].splitlines()[2]


def test_params_are_the_boundary_parameters(net_trace):
    params = [t for t in net_trace.boundary if t.role == "parameter"]
    assert params and all(t.name.startswith("arg0") for t in params)
    dense_kernel = next(t for t in params if t.name.endswith("['Dense_0']['kernel']"))
    assert dense_kernel.shape == (8 * 8 * CHANNELS, MOVES)
    assert net_trace.input_shapes == (("arg1", (BATCH, 8, 8, 8)),)


def test_lookup_reads_rows_not_the_table():
    table = jnp.zeros((1_000_000, 64), jnp.float32)
    idx = jnp.array([3, 14, 159], jnp.int32)
    trace = ADAPTER.trace(lambda t, i: t[i], (table, idx))
    gathers = [op for op in trace.operations if op.kind == "gather"]
    assert len(gathers) == 1
    # 3 rows × 64 × 4 bytes, plus the indices (as JAX feeds them to gather: 3 int32, maybe reshaped to (3, 1))
    assert gathers[0].cost.read_bytes == 3 * 64 * 4 + 3 * 4
    assert sum(op.cost.read_bytes for op in trace.operations) < 1_000_000  # never the 256 MB table


def test_scatter_add_reads_the_old_touched_values():
    x = jnp.zeros((1000, 8), jnp.float32)
    idx = jnp.array([1, 5], jnp.int32)
    upd = jnp.ones((2, 8), jnp.float32)
    trace = ADAPTER.trace(lambda a, i, u: a.at[i].add(u), (x, idx, upd))
    (scatter,) = [op for op in trace.operations if op.kind == "scatter"]
    # indices 2 × 4 + updates 2·8·4 + old touched values 2·8·4 = 136; writes the touched 2·8·4 = 64
    assert (scatter.cost.read_bytes, scatter.cost.write_bytes) == (8 + 64 + 64, 64)


def test_sort_top_k_and_random_are_covered_with_nonzero_costs():
    def f(key, x):
        noise = jax.random.normal(key, x.shape)
        k1, _ = jax.random.split(key)
        perm = jax.random.permutation(k1, x.shape[0])
        values, _ = jax.lax.top_k(x + noise, 3)
        return jnp.sort(x, axis=-1), values, perm

    trace = ADAPTER.trace(f, (jax.random.key(0), jnp.ones((16, 32), jnp.float32)))
    assert trace.coverage.unmodeled == () and trace.coverage.fraction == 1.0
    kinds = {op.kind: op for op in trace.operations}
    assert {"sort", "rng"} <= set(kinds)
    assert all(op.cost.flops > 0 for op in trace.operations if op.kind in ("sort", "rng"))


def test_grad_of_a_two_layer_mlp_has_the_backward_matmuls():
    batch, d_in, hidden, d_out = 32, 64, 128, 10

    def loss(params, x):
        h = jnp.tanh(x @ params["w1"])
        return jnp.sum((h @ params["w2"]) ** 2)

    params = {"w1": jnp.ones((d_in, hidden)), "w2": jnp.ones((hidden, d_out))}
    trace = ADAPTER.trace(jax.grad(loss), (params, jnp.ones((batch, d_in))))
    matmuls = sorted(op.cost.flops for op in trace.operations if op.name == "dot_general")
    forward = [2 * batch * d_in * hidden, 2 * batch * hidden * d_out]
    backward = [
        2 * batch * hidden * d_out,  # dW2 = hᵀ · dy
        2 * batch * d_out * hidden,  # dh = dy · W2ᵀ
        2 * batch * d_in * hidden,  # dW1 = xᵀ · dh'
    ]
    assert matmuls == sorted(forward + backward)
    assert trace.coverage.fraction == 1.0, trace.coverage.unmodeled


def test_profile_model_counts_parameters_gradients_and_adam_state():
    def apply(params, x):
        return jnp.tanh(x @ params["w"] + params["b"])

    params = {"w": jnp.ones((256, 512), jnp.float32), "b": jnp.ones((512,), jnp.float32)}
    profile = profile_model(
        apply, (params, jnp.ones((32, 256))), ADAPTER, param_argnums=(0,), training=True, optimizer_state_multiplier=2
    )
    parameter_bytes = 4 * (256 * 512 + 512)  # 526,336
    assert profile.memory.parameter_bytes == parameter_bytes
    assert profile.memory.training_minimum_bytes == parameter_bytes * (1 + 1 + 2)  # params, grads, Adam's m and v
    assert profile.memory.activation_minimum_peak_bytes == 4 * 32 * 512  # the largest single output


def test_benchmark_compiles_once_and_records_the_device():
    adapter = JaxAdapter(cross_check=False)
    m = adapter.benchmark(lambda a, b: a @ b, jnp.ones((64, 64)), jnp.ones((64, 64)), warmup=2, repeats=5)
    assert m.runs == 5 and len(m.warmup_seconds) == 2 and m.compile_seconds > 0
    assert m.device_kind == "cpu" and m.sync == "block_until_ready"


def test_cross_check_shows_xla_beside_ours():
    fn, args = (lambda a, b: jnp.tanh(a @ b)), (jnp.ones((32, 16)), jnp.ones((16, 8)))
    adapter = JaxAdapter()
    adapter.benchmark(fn, *args, warmup=1, repeats=2)  # the trace reads XLA's figures from this executable
    trace = adapter.trace(fn, args)
    check = trace.cross_check
    assert check["source"] == "XLA cost_analysis" and check["flops"] >= 8192  # XLA: 2·32·16·8 (+ its tanh count)
    report = analyze_gap(
        estimate_trace(trace), __import__("neural_cost").Measurement((1e-5,) * 5), HardwareSpec("c", 1e12, 1e11)
    )
    assert "cross-check: XLA cost_analysis reports" in report.render()


def test_hardware_is_the_device_jax_selected():
    spec = JaxAdapter().hardware()
    assert spec.kind == "cpu"


def test_flax_nnx_objects_passed_to_a_step_are_parameters_not_the_batch():
    """An NNX training step ``step(model, optimizer, x, y)``: the module and its optimizer are
    state. Unmarked, the batch was read off the first input whose leading dim matched the first
    output's — the norm's 1,024-wide bias the step hands back — and the report said batch 1024
    and 16× the samples/s. Marked (``workload_options``), the batch is x's 64."""
    import optax
    from flax import nnx

    from neural_cost.analysis.utilization import batch_input
    from neural_cost.analysis.workload import trace_workload

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.norm = nnx.LayerNorm(1024, rngs=rngs)
            self.dense = nnx.Linear(1024, 10, rngs=rngs)

        def __call__(self, x):
            return self.dense(self.norm(x))

    model = Net(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x, y = jnp.ones((64, 1024)), jnp.zeros((64,), jnp.int32)

    @nnx.jit
    def step(model, optimizer, x, y):
        def loss_fn(m):
            return optax.softmax_cross_entropy_with_integer_labels(m(x), y).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    assert ADAPTER.workload_options(step, (model, optimizer, x, y), {}) == {"param_argnums": (0, 1)}
    estimate = estimate_trace(trace_workload(ADAPTER, step, (model, optimizer, x, y)))
    assert batch_input(estimate) == ("arg2", (64, 1024))
    assert ADAPTER.workload_options(step, (x, y), {}) == {}  # plain arrays: nothing marked
