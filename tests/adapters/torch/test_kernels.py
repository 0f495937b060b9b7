"""Eager PyTorch's kernels: one per aten call that does work, traffic the records' unfused bytes
(a recurrent layer's: its operands once), footprint its distinct regions."""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from neural_cost import (  # noqa: E402
    HardwareSpec,
    MemoryLevel,
    Trace,
    analyze_gap,
    estimate_trace,
)
from neural_cost.adapters import TorchAdapter  # noqa: E402
from neural_cost.adapters._torch.kernels import COMPILED_NOTE, KERNEL_SOURCE  # noqa: E402
from tests.adapters.torch.test_models import ConvNet, Transformer  # noqa: E402
from tests.helpers import cpu_measurement  # noqa: E402

ADAPTER = TorchAdapter()


def _linear_trace():
    torch.manual_seed(0)
    return ADAPTER.trace(nn.Sequential(nn.Linear(4, 3)), torch.zeros(2, 4))


def _claims_each_record_once(trace):
    claimed = [i for kernel in trace.kernels for i in kernel.operations]
    assert len(claimed) == len(set(claimed))
    return set(claimed)


def test_addmm_is_one_kernel_of_its_matmul_and_bias_add():
    trace = _linear_trace()
    assert trace.kernel_source == KERNEL_SOURCE
    assert [op.name for op in trace.operations] == ["addmm", "addmm.bias"]
    (kernel,) = trace.kernels
    assert kernel.name == "0/addmm"
    assert kernel.kind == "aten.addmm.default"
    assert kernel.operations == (0, 1)
    assert kernel.scopes == ("0",)
    assert kernel.executions == 1
    # matmul reads x (2·4·4 = 32 B) and Wᵀ (4·3·4 = 48 B), writes (2,3) (24 B): 104;
    # the bias add reads the product (24 B) and the bias (3·4 = 12 B), writes 24 B: 60
    assert kernel.traffic_bytes == 104 + 60
    # distinct regions: x 32 + Wᵀ (a view of the weight's storage) 48 + bias 12 + out 24
    assert kernel.footprint_bytes == 32 + 48 + 12 + 24
    assert kernel.flops_by_dtype == {}  # the estimate fills it from the records
    (scored,) = estimate_trace(trace).kernels
    assert scored.flops_by_dtype == {"float32": 2 * 2 * 4 * 3 + 2 * 3}  # matmul 48 + bias add 6


def test_in_place_call_footprint_counts_its_buffer_once():
    trace = ADAPTER.trace(nn.Sequential(nn.Linear(4, 3), nn.ReLU(inplace=True)), torch.zeros(2, 4))
    relu = trace.kernels[-1]
    assert (relu.name, relu.kind) == ("1/relu_", "aten.relu_.default")
    assert relu.traffic_bytes == 2 * 24  # reads and writes the (2,3) float32 activation
    assert relu.footprint_bytes == 24  # one buffer, read and written in place


def test_views_of_one_storage_count_at_most_the_storage():
    trace = ADAPTER.trace(lambda w: w + w[0], torch.zeros(3, 4))
    (add,) = trace.kernels
    assert add.traffic_bytes == 48 + 16 + 48  # reads w (3·4 floats) and its row w[0] (4), writes (3,4)
    # w and w[0] are two views of one 48 B storage: together at most 48 B; the result 48 B
    assert add.footprint_bytes == 48 + 48


MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 4)), lambda: torch.randn(3, 8)),
    "convnet": (lambda: ConvNet().eval(), lambda: torch.randn(2, 3, 16, 16)),
    "attention": (lambda: Transformer().eval(), lambda: torch.randint(0, 100, (2, 12))),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_kernel_traffic_is_the_unfused_traffic_and_flops_are_the_records(name):
    torch.manual_seed(0)
    make_model, make_input = MODELS[name]
    trace = ADAPTER.trace(make_model(), make_input())
    estimate = estimate_trace(trace)
    assert _claims_each_record_once(trace) == set(range(len(trace.operations)))  # every record, once
    assert sum(k.total_traffic_bytes for k in trace.kernels) == estimate.bytes
    assert estimate.compiled_bytes == estimate.bytes
    assert sum(k.flops for k in estimate.kernels) == estimate.flops
    for kernel in estimate.kernels:
        rows = [estimate.by_operation[i] for i in kernel.operations]
        assert kernel.flops == sum(row.flops for row in rows)
        assert kernel.traffic_bytes == sum(row.bytes for row in rows)
        assert kernel.kind.startswith("aten.")
    assert Trace.from_dict(trace.to_dict()) == trace


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="nn.LSTM runs as mkldnn_rnn_layer with oneDNN")
def test_lstm_layer_is_one_kernel_moving_its_operands_once():
    steps, batch, inputs, hidden = 64, 2, 8, 16
    trace = ADAPTER.trace(nn.LSTM(inputs, hidden, num_layers=2).eval(), torch.zeros(steps, batch, inputs))
    layers = [k for k in trace.kernels if k.kind == "aten.mkldnn_rnn_layer.default"]
    assert [k.name for k in layers] == ["mkldnn_rnn_layer", "mkldnn_rnn_layer#2"]
    f32 = 4
    # layer 1 reads x (64·2·8), W_ih (64·8), W_hh (64·16), b_ih, b_hh (64 each), h0[0] and
    # c0[0] (2·16 each); writes y (64·2·16), h_n and c_n (2·16 each): 4,864 floats = 19,456 B
    first = steps * batch * inputs + 4 * hidden * inputs + 4 * hidden * hidden + 2 * 4 * hidden + 2 * batch * hidden
    first += steps * batch * hidden + 2 * batch * hidden
    assert layers[0].traffic_bytes == first * f32 == 19_456
    # layer 2 reads layer 1's y (64·2·16) and W_ih (64·16) instead: 6,400 floats = 25,600 B
    second = steps * batch * hidden + 4 * hidden * hidden + 4 * hidden * hidden + 2 * 4 * hidden + 2 * batch * hidden
    second += steps * batch * hidden + 2 * batch * hidden
    assert layers[1].traffic_bytes == second * f32 == 25_600
    estimate = estimate_trace(trace)
    for kernel in layers:
        assert kernel.footprint_bytes == kernel.traffic_bytes  # every operand is a distinct buffer
        unfused = sum(estimate.by_operation[i].bytes for i in kernel.operations)
        assert unfused > 20 * kernel.traffic_bytes  # the records re-read W_hh and the gates at all 64 steps
        assert [trace.operations[i].kind for i in kernel.operations] == [
            "matmul",
            "matmul",
            "elementwise",
            "elementwise",
        ]
    assert sum(k.flops for k in estimate.kernels) == estimate.flops
    assert estimate.compiled_bytes == sum(k.total_traffic_bytes for k in trace.kernels) < estimate.bytes


def test_unmodeled_call_is_a_kernel_with_no_records():
    def model(x):
        return torch.kthvalue(x * 2.0, 2)

    trace = ADAPTER.trace(model, torch.rand(2, 8))
    assert dict(trace.coverage.unmodeled) == {"aten.kthvalue": 1}
    mul, kth = trace.kernels
    assert (mul.kind, mul.operations) == ("aten.mul.Tensor", (0,))
    assert (kth.name, kth.kind, kth.operations) == ("kthvalue", "aten.kthvalue.default", ())
    # reads the (2,8) float32 product, writes a value (float32) and an index (int64) per row: 64 + 8 + 16
    assert kth.traffic_bytes == 2 * 8 * 4 + 2 * 4 + 2 * 8
    assert kth.footprint_bytes == 64 + 24
    estimate = estimate_trace(trace)
    assert estimate.compiled_bytes == estimate.bytes + 88  # the unmodeled call's bytes are known


def test_views_are_not_kernels():
    trace = ADAPTER.trace(lambda x: (x.t().reshape(-1)[:4] + 1.0).view(2, 2), torch.zeros(3, 4))
    assert trace.coverage.free > 0
    assert [k.kind for k in trace.kernels] == ["aten.clone.default", "aten.add.Tensor"]  # reshape of a transpose copies


def test_training_step_has_forward_backward_and_optimizer_kernels():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    trace = ADAPTER.trace(
        model, torch.randn(3, 8), training=True, loss_fn=lambda y: y.square().mean(), optimizer=optimizer
    )
    estimate = estimate_trace(trace)
    assert _claims_each_record_once(trace) == set(range(len(trace.operations)))
    assert {scope for k in trace.kernels for scope in k.scopes} == {"forward", "backward", "optimizer"}
    assert sum(k.total_traffic_bytes for k in trace.kernels) == estimate.bytes
    assert sum(k.flops for k in estimate.kernels) == estimate.flops
    # forward kernels are named by module, the rest by phase
    assert trace.kernels[0].name == "0/addmm"
    assert any(k.name.startswith("backward/mm") for k in trace.kernels)
    assert any(k.name.startswith("optimizer/") for k in trace.kernels)


def test_compiled_module_is_noted_as_traced_eagerly():
    model = nn.Sequential(nn.Linear(4, 3))
    assert COMPILED_NOTE not in ADAPTER.trace(model, torch.zeros(2, 4)).notes
    compiled = torch.compile(model)
    trace = ADAPTER.trace(compiled, torch.zeros(2, 4))
    assert COMPILED_NOTE in trace.notes
    assert [k.kind for k in trace.kernels] == ["aten.addmm.default"]
    wrapper = nn.Sequential(torch.compile(nn.Linear(4, 3)))
    assert COMPILED_NOTE in ADAPTER.trace(wrapper, torch.zeros(2, 4)).notes


def test_gap_analysis_scores_the_kernels_at_their_levels():
    trace = _linear_trace()
    spec = HardwareSpec(
        "test cpu",
        peak_flops=1e9,
        memory_bandwidth=1e9,
        kind="cpu",
        memory_levels=(MemoryLevel("L1d", 100, bandwidth=4e9), MemoryLevel("L2", 1000, bandwidth=2e9)),
    )
    report = analyze_gap(estimate_trace(trace), cpu_measurement(), spec)
    (row,) = report.kernel_rows
    assert (row.name, row.operations, row.traffic_bytes, row.footprint_bytes) == ("0/addmm", 2, 164, 116)
    assert row.level == "L2"  # 116 B does not fit the 100 B L1d
    assert row.compute_seconds == 54 / 1e9
    assert row.memory_seconds == 164 / 2e9
    assert report.bound_seconds == max(54 / 1e9, 164 / 2e9)
