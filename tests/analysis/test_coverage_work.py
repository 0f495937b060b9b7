"""Coverage that cannot lie (issue 12, item 2): a trace that modeled nothing is an error, and
coverage has a work figure beside the operation count, which the warning and the gate use.

Was: `neural-cost analyze` of a JAX program with `--framework torch` printed "coverage: 100.0%
of 0 aten ops modeled"; a torch forward doing its matmuls in numpy printed "100.0% (0 modeled,
3 free)"; one unmodeled 512×512 SVD among 30 small modeled operations passed a 90% gate.
"""

import pytest

from neural_cost import AdapterError, Coverage, HardwareSpec, Measurement, Operation, Trace, analyze_gap
from neural_cost.adapters.base import FrameworkAdapter, require_modeled
from neural_cost.costs import estimate_trace

CAUSE = "the model may run in another framework (wrong --framework?) or do its work outside torch (numpy?)"
SPEC = HardwareSpec("c", 1e12, 1e11)
RUN = Measurement((1e-3,) * 5)

# The program of the issue: 15 × (64×64 matmul, relu) in float32 = 30 modeled ops, and one unmodeled
# SVD of a float32 (512, 512) matrix.
#   matmul: 2·64·64·64 = 524,288 FLOPs; read 2·64·64·4 = 32,768 + write 16,384 = 49,152 bytes
#   relu:   64·64 = 4,096 FLOPs;        read 16,384 + write 16,384 = 32,768 bytes
#   modeled: FLOPs 15·(524,288 + 4,096) = 7,925,760; bytes 15·(49,152 + 32,768) = 1,228,800
#   SVD at its elementwise floor: outputs U (512, 512), S (512,), Vh (512, 512) = 524,800 elements
#       → 524,800 FLOPs; bytes read 512·512·4 = 1,048,576 + written 524,800·4 = 2,099,200 = 3,147,776
#   operations 30/31 = 96.77% → "96.7%" (≥ 90%)
#   FLOP share 7,925,760 / 8,450,560 = 93.79%; byte share 1,228,800 / 4,376,576 = 28.07%
#   work = the lower = 1,228,800 / 4,376,576 → "28.0%" (< 90%)
MODELED_FLOPS, MODELED_BYTES = 7_925_760, 1_228_800
SVD_FLOPS, SVD_BYTES = 524_800, 3_147_776
WORK = (1_228_800, 4_376_576)


def svd_program_by_hand() -> Trace:
    ops = []
    for _ in range(15):
        ops.append(Operation("mm", "matmul", ((64, 64), (64, 64)), (64, 64)))
        ops.append(Operation("relu", "elementwise", ((64, 64),), (64, 64), attrs={"op": "relu"}))
    coverage = Coverage(
        total=31,
        modeled=30,
        unmodeled=(("aten._linalg_svd", 1),),
        unit="aten ops",
        unmodeled_work=(("aten._linalg_svd", SVD_FLOPS, SVD_BYTES),),
    )
    return Trace(tuple(ops), coverage, framework="torch")


def test_one_unmodeled_svd_among_30_small_ops_fails_the_gate_on_work():
    estimate = estimate_trace(svd_program_by_hand())
    assert (estimate.flops, estimate.bytes) == (MODELED_FLOPS, MODELED_BYTES)
    assert (estimate.coverage.unmodeled_flops, estimate.coverage.unmodeled_bytes) == (SVD_FLOPS, SVD_BYTES)
    assert estimate.work_share == WORK
    report = analyze_gap(estimate, RUN, SPEC)
    assert estimate.coverage.fraction == 30 / 31 and report.gate_fraction == 1_228_800 / 4_376_576
    assert report.low_coverage  # 28.0% < the 90% default, although operations are 96.7%
    text = report.render()
    assert (
        "  coverage: operations 96.7% · work ≤ 28.0% (of 31 aten ops: modeled 30, free 0, unmodeled 1: "
        "aten._linalg_svd x1)\n"
        "  WARNING: Low coverage: at most 28.0% of the work (FLOPs and bytes, unmodeled aten ops at their "
        "elementwise floor, the least they can do) is in modeled aten ops; the roofline bound"
    ) in text


def test_the_svd_program_traced_by_torch_sizes_its_unmodeled_op():
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import TorchAdapter

    # A custom op no table will model: the recorder sees it whole, as one unmodeled op.
    @torch.library.custom_op("neural_cost_test::svd512", mutates_args=())
    def svd512(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        u, s, vh = torch.linalg.svd(a)
        return u.clone(), s.clone(), vh.clone()

    def forward(x, w, a):
        for _ in range(15):
            x = torch.relu(x @ w)
        return x, torch.ops.neural_cost_test.svd512(a)[1]

    trace = TorchAdapter().trace(forward, (torch.randn(64, 64), torch.randn(64, 64), torch.randn(512, 512)))
    coverage = trace.coverage
    assert (coverage.total, coverage.modeled, coverage.unmodeled) == (31, 30, (("neural_cost_test.svd512", 1),))
    assert coverage.unmodeled_work == (("neural_cost_test.svd512", SVD_FLOPS, SVD_BYTES),)
    estimate = estimate_trace(trace)
    assert (estimate.flops, estimate.bytes, estimate.work_share) == (MODELED_FLOPS, MODELED_BYTES, WORK)
    text = analyze_gap(estimate, RUN, SPEC).render()
    assert "coverage: operations 96.7% · work ≤ 28.0% (of 31 aten ops: modeled 30, free 0, unmodeled 1: " in text


def test_a_torch_forward_doing_its_matmuls_in_numpy_is_an_error():
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import TorchAdapter

    class NumpyMatmuls(torch.nn.Module):
        def forward(self, x):
            a = x.numpy()
            return torch.from_numpy(a @ a @ a)

    with pytest.raises(AdapterError) as error:
        TorchAdapter().trace(NumpyMatmuls(), (torch.ones(4, 4),))
    # .numpy() and from_numpy are the only aten ops: both free (an alias and a view of host memory)
    assert str(error.value).startswith("TorchAdapter.trace: no aten op was modeled (of 2 aten ops: free 2): ")
    assert str(error.value).endswith(CAUSE)


def test_a_jax_program_traced_with_the_torch_adapter_is_an_error():
    pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    from neural_cost.adapters import TorchAdapter

    with pytest.raises(AdapterError) as error:
        TorchAdapter().trace(lambda w, x: jnp.tanh(x @ w), (jnp.ones((16, 8)), jnp.ones((4, 16))))
    assert str(error.value) == f"TorchAdapter.trace: the trace holds no aten ops at all: {CAUSE}"


def test_a_jax_program_of_free_equations_only_is_an_error():
    jnp = pytest.importorskip("jax.numpy")
    from neural_cost.adapters import JaxAdapter

    with pytest.raises(AdapterError, match=r"^JaxAdapter.trace: no equation was modeled \(of 1 equation: free 1\)"):
        JaxAdapter().trace(lambda x: jnp.reshape(x, (8,)), (jnp.ones((2, 4)),))


def test_a_users_adapter_returning_no_operations_is_an_error():
    class Empty(FrameworkAdapter):
        def operations(self, model, args=(), kwargs=None, **options):
            return []

    with pytest.raises(AdapterError) as error:
        Empty().trace(None)
    assert str(error.value) == (
        "Empty.trace: the trace holds no operations at all: the model may run in another framework "
        "(wrong --framework?) or do its work outside what Empty records (numpy?)"
    )


def test_require_modeled_names_the_unmodeled_ops():
    coverage = Coverage(total=3, modeled=0, free=1, unmodeled=(("svd", 2),), unit="graph ops")
    with pytest.raises(AdapterError) as error:
        require_modeled(coverage, "X.trace", "tensorflow")
    assert str(error.value) == (
        "X.trace: no graph op was modeled (of 3 graph ops: free 1, unmodeled svd x2): the model may run in "
        "another framework (wrong --framework?) or do its work outside tensorflow (numpy?)"
    )
    require_modeled(Coverage(total=1, modeled=1), "X.trace", "tensorflow")  # one modeled op is enough


class SizedContext:
    """A context that reads its call's operands, as the adapters' contexts do: the call here is
    already ``(inputs, outputs)`` as ``(shape, dtype)`` pairs."""

    @staticmethod
    def operands(call):
        return call


def test_the_lowering_driver_sizes_unmodeled_ops_at_their_elementwise_floor():
    from neural_cost.adapters._registry import OpTable
    from neural_cost.adapters._walk import WalkState, lower, take_costliest_branch

    table = OpTable("test op", "call")
    sort = ([((1000,), "float32")], [((1000,), "float32"), ((1000,), "int64")])

    def raises(*_args):
        raise ValueError("a form this rule does not describe")

    state = WalkState()
    # 3 executions of a sort: FLOPs 3·2,000 = 6,000; bytes 3·(4,000 read + 4,000 + 8,000 written) = 48,000
    lower(state, table, None, "sort", 3, (sort, SizedContext()))
    # A builder that raises leaves its op unmodeled, sized the same way: 1·2,000 FLOPs, 16,000 bytes
    lower(state, table, raises, "sort", 1, (sort, SizedContext()))
    # No context that reads operands: the size is unknown, and stays unknown when sized ones join it
    lower(state, table, None, "cumsum", 2, ())
    lower(state, table, None, "cumsum", 1, (sort, SizedContext()))
    assert state.work_entries() == (("sort", 8_000, 64_000),)
    # An unmodeled count added outside lower (a walker's own rule) leaves the name unsized, never undercounted
    state.unmodeled["sort"] += 1
    assert state.work_entries() == ()

    # A conditional: the costliest branch is absorbed whole, the other's unmodeled ops stay, with their sizes.
    mm = Operation("mm", "matmul", ((4, 8), (8, 2)), (4, 2))
    costly, other = WalkState(operations=[mm], modeled=1, executed=1), WalkState()
    lower(other, table, None, "sort", 1, (sort, SizedContext()))
    lower(costly, table, None, "svd", 1, (([((2, 2), "float32")], [((2, 2), "float32")]), SizedContext()))
    outer = WalkState()
    take_costliest_branch(outer, [costly, other], 1, "cond", "cond at top", "equations")
    # svd: 4 FLOPs, 16 + 16 = 32 bytes; sort: 2,000 FLOPs, 16,000 bytes
    assert sorted(outer.work_entries()) == [("sort", 2_000, 16_000), ("svd", 4, 32)]
