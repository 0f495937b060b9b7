"""The pointwise / reduction / norm / softmax / pooling / random / optimizer aten table on real
modules: every call is lowered through TABLE by a small recording dispatch mode, and the
records are checked against closed forms written beside them (the conventions are in
ops_pointwise's docstring). Free entries are listed with their reasons and checked to alias.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from neural_cost import Operation  # noqa: E402
from neural_cost.adapters._torch import ops_free, ops_norms, ops_pointwise, ops_random_optim, ops_reduce  # noqa: E402
from neural_cost.adapters._torch.table import EMPTY_REASONS, TABLE, AtenCall, Free, TorchContext  # noqa: E402
from neural_cost.costs.softmax_pool import adaptive_windows  # noqa: E402

OURS = {m.__name__ for m in (ops_pointwise, ops_reduce, ops_norms, ops_random_optim, ops_free)}


class Recording(TorchDispatchMode):
    """Runs each aten call, then lowers it through TABLE: records, free names, unmodeled names."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[AtenCall, list[Operation]]] = []
        self.free: list[str] = []
        self.unmodeled: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.namespace != "aten":  # profiler markers around optimizer steps
            return out
        call = AtenCall(func, tuple(args), dict(kwargs), out)
        entry = TABLE.get(call.name)
        if entry is None:
            self.unmodeled.append(call.name)
        elif isinstance(entry, Free):
            self.free.append(call.name)
        else:
            records = list(entry(call, TorchContext("scope")))
            assert len(records) <= 1, f"{call.name}: one record per call (the tracer counts a call once)"
            if records:
                self.calls.append((call, records))
            else:
                assert call.name in EMPTY_REASONS, f"{call.name} returned no record and has no reason"
                self.free.append(call.name)
        return out

    def records(self, name: str) -> list[Operation]:
        return [op for call, ops in self.calls for op in ops if call.name == name]

    def one(self, name: str) -> Operation:
        found = self.records(name)
        assert len(found) == 1, f"{name}: {len(found)} records ({[c.name for c, _ in self.calls]})"
        return found[0]

    def flops(self, name: str) -> int:
        return sum(op.cost.flops for op in self.records(name))


def record(fn, *, inference: bool = False) -> Recording:
    recording = Recording()
    if inference:
        with torch.inference_mode(), recording:
            fn()
    else:
        with recording:
            fn()
    return recording


def backward_of(module, x):
    def run():
        module(x).sum().backward()

    return run


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


F32 = "float32"


# --- the table itself ---------------------------------------------------------------------


def _our_entries() -> dict[str, object]:
    ours = {}
    for name, entry in TABLE.items():
        if isinstance(entry, Free):
            if name in ops_free.FREE_REASONS:
                ours[name] = entry
        elif getattr(entry, "__module__", None) in OURS:
            ours[name] = entry
    return ours


def test_every_entry_names_a_real_aten_op_packet():
    ours = _our_entries()
    assert len(ours) > 450  # pointwise + in-place packets, reductions, norms, pooling, rng, optimizers, free
    missing = sorted(name for name in ours if not hasattr(torch.ops.aten, name))
    assert missing == []


def test_names_left_to_the_other_table_are_not_registered_here():
    # matmul/conv/attention/RNN/index/copy ops belong to ops_compute; max.dim shares the "max"
    # packet with max.default, so "max"/"min" are registered here with every overload.
    theirs = ("mm", "addmm", "bmm", "convolution", "embedding", "gather", "scatter", "cat", "stack", "copy_",
              "clone", "_to_copy", "constant_pad_nd", "where", "masked_fill", "cumsum", "sort", "topk", "argmax",
              "repeat", "flip", "roll", "tril", "triu", "index_select")  # fmt: skip
    assert [name for name in theirs if name in _our_entries()] == []


def test_free_entries_listed_with_their_reasons():
    listing = {name: TABLE[name].reason for name in ops_free.FREE_REASONS}
    for name, reason in sorted(listing.items()):
        print(f"{name:28s} {reason}")
        assert reason == ops_free.FREE_REASONS[name]
        assert reason and "\n" not in reason and len(reason) < 120
    required = {"view", "_unsafe_view", "t", "transpose", "permute", "expand", "alias", "detach", "unsqueeze",
                "squeeze", "select", "slice", "split", "split_with_sizes", "unbind", "as_strided", "view_as_real",
                "view_as_complex", "lift_fresh", "empty", "empty_like", "empty_strided", "sym_size"}  # fmt: skip
    assert required <= set(listing)
    for copies in ("contiguous", "clone", "reshape", "_to_copy", "copy_"):
        assert not isinstance(TABLE.get(copies), Free)  # they move data (or are conditionally free)


X = torch.randn(2, 3, 4)
C = torch.randn(2, 3, dtype=torch.complex64)
A = torch.ops.aten

# How each free op is called, and what its output must be: "view" (shares the input's
# storage), "alloc" (a new, unwritten buffer), "meta" (not a tensor: sizes, flags).
FREE_CALLS = {
    "view": ("view", lambda: A.view(X, [6, 4])),
    "_unsafe_view": ("view", lambda: A._unsafe_view(X, [6, 4])),
    "_reshape_alias": ("view", lambda: A._reshape_alias(X, [6, 4], [4, 1])),
    "view_as": ("view", lambda: A.view_as(X, torch.empty(6, 4))),
    "t": ("view", lambda: A.t(X[0])),
    "transpose": ("view", lambda: A.transpose.int(X, 0, 2)),
    "permute": ("view", lambda: A.permute(X, [2, 0, 1])),
    "movedim": ("view", lambda: A.movedim.int(X, 0, 2)),
    "swapaxes": ("view", lambda: A.swapaxes(X, 0, 1)),
    "swapdims": ("view", lambda: A.swapdims(X, 0, 1)),
    "expand": ("view", lambda: A.expand(X[:1], [5, 3, 4])),
    "expand_as": ("view", lambda: A.expand_as(X[:, :1], X)),
    "alias": ("view", lambda: A.alias(X)),
    "detach": ("view", lambda: A.detach(X)),
    "lift_fresh": ("view", lambda: A.lift_fresh(X)),
    "unsqueeze": ("view", lambda: A.unsqueeze(X, 1)),
    "squeeze": ("view", lambda: A.squeeze.dim(X[:, :1], 1)),
    "select": ("view", lambda: A.select.int(X, 1, 2)),
    "slice": ("view", lambda: A.slice.Tensor(X, 2, 1, 3)),
    "narrow": ("view", lambda: A.narrow(X, 2, 1, 2)),
    "split": ("view", lambda: A.split.Tensor(X, 2, 2)),
    "split_with_sizes": ("view", lambda: A.split_with_sizes(X, [1, 3], 2)),
    "chunk": ("view", lambda: A.chunk(X, 2, 2)),
    "unsafe_split": ("view", lambda: A.unsafe_split.Tensor(X, 2, 2)),
    "unsafe_split_with_sizes": ("view", lambda: A.unsafe_split_with_sizes(X, [1, 3], 2)),
    "unsafe_chunk": ("view", lambda: A.unsafe_chunk(X, 2, 2)),
    "tensor_split": ("view", lambda: A.tensor_split.sections(X, 2, 2)),
    "unbind": ("view", lambda: A.unbind.int(X, 1)),
    "as_strided": ("view", lambda: A.as_strided(X, [4, 6], [1, 4])),
    "diagonal": ("view", lambda: A.diagonal(X, 0, 1, 2)),
    "unfold": ("view", lambda: A.unfold(X, 2, 2, 1)),
    "view_as_real": ("view", lambda: A.view_as_real(C)),
    "view_as_complex": ("view", lambda: A.view_as_complex(torch.randn(3, 2))),
    "real": ("view", lambda: A.real(C)),
    "imag": ("view", lambda: A.imag(C)),
    "conj": ("view", lambda: A.conj(C)),
    "_conj": ("view", lambda: A._conj(C)),
    "_neg_view": ("view", lambda: A._neg_view(C)),
    "positive": ("view", lambda: A.positive(X)),
    "detach_": ("view", lambda: A.detach_(X)),
    "squeeze_": ("view", lambda: A.squeeze_.dim(torch.empty(2, 1, 3), 1)),
    "unsqueeze_": ("view", lambda: A.unsqueeze_(torch.empty(2, 3), 0)),
    "t_": ("view", lambda: A.t_(torch.empty(2, 3))),
    "transpose_": ("view", lambda: A.transpose_(torch.empty(2, 3), 0, 1)),
    "as_strided_": ("view", lambda: A.as_strided_(torch.empty(6), [2, 3], [3, 1])),
    "sym_size": ("meta", lambda: A.sym_size.int(X, 0)),
    "sym_stride": ("meta", lambda: A.sym_stride.int(X, 0)),
    "sym_numel": ("meta", lambda: A.sym_numel(X)),
    "sym_storage_offset": ("meta", lambda: A.sym_storage_offset(X)),
    "size": ("meta", lambda: A.size.int(X, 0)),
    "stride": ("meta", lambda: A.stride.int(X, 0)),
    "numel": ("meta", lambda: A.numel(X)),
    "dim": ("meta", lambda: A.dim(X)),
    "is_contiguous": ("meta", lambda: A.is_contiguous(X)),
    "is_same_size": ("meta", lambda: A.is_same_size(X, X)),
    "_assert_tensor_metadata": ("meta", lambda: A._assert_tensor_metadata(X, size=[2, 3, 4])),
    "empty": ("alloc", lambda: A.empty.memory_format([2, 3])),
    "empty_like": ("alloc", lambda: A.empty_like(X)),
    "empty_strided": ("alloc", lambda: A.empty_strided([2, 3], [1, 2])),
    "empty_permuted": ("alloc", lambda: A.empty_permuted([2, 3], [1, 0])),
    "new_empty": ("alloc", lambda: A.new_empty(X, [5])),
    "new_empty_strided": ("alloc", lambda: A.new_empty_strided(X, [2, 3], [3, 1])),
}


def test_every_free_entry_has_an_aliasing_check():
    assert set(FREE_CALLS) == set(ops_free.FREE_REASONS)


def _storage(tensor):
    return tensor.untyped_storage().data_ptr()


@pytest.mark.parametrize("name", sorted(FREE_CALLS))
def test_free_ops_only_alias_or_read_metadata_on_real_calls(name):
    expect, call = FREE_CALLS[name]
    inputs = {_storage(t) for t in (X, C)}
    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            seen.append((func.overloadpacket.__name__, args, out))
            return out

    with torch.inference_mode(), Spy():  # composite ops (chunk, movedim...) dispatch whole here
        call()
    dispatched = [entry for entry in seen if entry[0] == name]
    assert dispatched, f"{name} did not dispatch (saw {[s[0] for s in seen]})"
    _, args, out = dispatched[-1]
    outputs = [t for t in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(t, torch.Tensor)]
    sources = [a for a in args if isinstance(a, torch.Tensor)]
    if expect == "meta":
        assert outputs == [] or all(o.numel() == 0 for o in outputs)
    elif expect == "alloc":
        assert len(outputs) == 1 and _storage(outputs[0]) not in inputs
    else:
        assert outputs and sources
        assert all(_storage(o) == _storage(sources[0]) for o in outputs), f"{name} output does not alias its input"


def test_conditionally_free_reshape_and_contiguous():
    def run():
        x = torch.randn(4, 6)
        x.reshape(24)  # contiguous: a view
        x.t().reshape(24)  # transposed: a copy
        torch.ops.aten.contiguous(x)  # already contiguous: x itself (Tensor.contiguous skips dispatch)
        x.t().contiguous()  # a copy
        x.t().flatten()  # a copy

    rec = record(run, inference=True)
    assert rec.free.count("reshape") == 1 and rec.free.count("contiguous") == 1
    copies = [op for _, ops in rec.calls for op in ops if op.name != "randn"]
    assert [(op.name, op.kind) for op in copies] == [("reshape", "copy"), ("contiguous", "copy"), ("flatten", "copy")]
    assert all((op.cost.read_bytes, op.cost.write_bytes) == (96, 96) for op in copies)  # 24 floats each way
    assert "reshape" in EMPTY_REASONS and "contiguous" in EMPTY_REASONS


# --- pointwise ------------------------------------------------------------------------------

E = 4 * 6  # elements of the pointwise operands below


@pytest.mark.parametrize(
    ("fn", "name", "flops_per_element", "transcendentals_per_element"),
    [
        (lambda x, y: torch.add(x, y), "add", 1, 0),
        (lambda x, y: torch.add(x, y, alpha=2), "add", 2, 0),  # x + 2·y
        (lambda x, y: x.clone().sub_(y, alpha=0.5), "sub_", 2, 0),
        (lambda x, y: torch.rsub(x, y), "rsub", 1, 0),
        (lambda x, y: torch.div(x, y, rounding_mode="floor"), "div", 2, 0),  # divide, floor
        (lambda x, y: torch.pow(x, 2), "pow", 1, 0),  # x·x
        (lambda x, y: torch.pow(x, 3), "pow", 2, 0),  # x·x·x
        (lambda x, y: torch.pow(x, -0.5), "pow", 1, 1),  # rsqrt
        (lambda x, y: torch.pow(x, 2.5), "pow", 3, 2),  # exp(2.5·log x)
        (lambda x, y: torch.pow(x, y), "pow", 3, 2),
        (lambda x, y: torch.pow(2.0, y), "pow", 2, 1),  # exp(y·log 2), log 2 hoisted
        (lambda x, y: torch.exp(x), "exp", 1, 1),
        (lambda x, y: torch.rsqrt(x), "rsqrt", 1, 1),
        (lambda x, y: torch.sigmoid(x), "sigmoid", 4, 1),  # 1/(1+exp(-x))
        (lambda x, y: F.silu(x), "silu", 5, 1),  # x·sigmoid(x): catalog 5 (the CPU kernel folds it into 4)
        (lambda x, y: F.gelu(x), "gelu", 5, 1),  # 0.5·x·(1+erf(x/√2))
        (lambda x, y: F.gelu(x, approximate="tanh"), "gelu", 9, 1),  # x³ 2, ·κ, +x, ·β, tanh, +1, ·x, ·0.5
        (lambda x, y: F.mish(x), "mish", 4, 3),
        (lambda x, y: F.softplus(x), "softplus", 6, 2),
        (lambda x, y: F.elu(x), "elu", 5, 1),  # x > 0 ? x : α·(exp(x) - 1): compare, exp, subtract, ·α, select
        (lambda x, y: F.selu(x), "elu", 6, 1),  # selu dispatches as elu with a scale: the catalog's selu
        (lambda x, y: F.celu(x, 2.0), "celu", 6, 1),  # x > 0 ? x : α·(exp(x/α) - 1): elu and a divide
        (lambda x, y: F.hardswish(x), "hardswish", 5, 0),
        (lambda x, y: F.hardsigmoid(x), "hardsigmoid", 4, 0),
        (lambda x, y: F.relu6(x), "hardtanh", 2, 0),
        (lambda x, y: F.leaky_relu(x), "leaky_relu", 3, 0),
        (lambda x, y: torch.relu(x), "relu", 1, 0),
        (lambda x, y: torch.clamp(x, -1, 1), "clamp", 2, 0),
        (lambda x, y: torch.clamp(x, min=0), "clamp", 1, 0),
        (lambda x, y: torch.lerp(x, y, 0.3), "lerp", 3, 0),
        (lambda x, y: torch.addcmul(x, x, y, value=0.5), "addcmul", 3, 0),
        (lambda x, y: torch.remainder(x, y), "remainder", 4, 0),
        (lambda x, y: torch.isinf(x), "isinf", 2, 0),
        (lambda x, y: torch.nan_to_num(x), "nan_to_num", 6, 0),
        (lambda x, y: x > y, "gt", 1, 0),
        (lambda x, y: torch.logical_and(x > 0, y > 0), "logical_and", 1, 0),
        (lambda x, y: torch.erfinv(x.clamp(-0.5, 0.5)), "erfinv", 1, 1),
        (lambda x, y: torch.frac(x), "frac", 2, 0),
        (lambda x, y: torch.round(x, decimals=2), "round", 3, 0),
    ],
)
def test_pointwise_counts_on_real_calls(fn, name, flops_per_element, transcendentals_per_element):
    x, y = torch.rand(4, 6) + 0.5, torch.rand(4, 6) + 0.5
    with torch.no_grad():
        rec = record(lambda: fn(x, y))
    op = rec.one(name)
    assert op.kind == "elementwise" and op.output == (4, 6)
    assert op.cost.flops == flops_per_element * E
    assert op.cost.transcendentals == transcendentals_per_element * E


def test_out_and_in_place_variants_read_their_operands_and_write_once():
    x, y, out = torch.randn(4, 6), torch.randn(4, 6), torch.empty(4, 6)
    rec = record(lambda: (torch.mul(x, y, out=out), x.clone().mul_(y), torch.mul(x, 2.0), x.mul(torch.tensor(2.0))))
    out_form, in_place, scalar, zero_d = rec.records("mul")[0], rec.one("mul_"), *rec.records("mul")[1:]
    assert out_form.inputs == ((4, 6), (4, 6)) and out_form.cost.read_bytes == 192  # out= is written, not read
    assert out_form.cost.write_bytes == 96  # 24 * 4
    assert in_place.inputs == ((4, 6), (4, 6)) and in_place.cost.flops == 24  # self is read and written
    assert scalar.inputs == ((4, 6),)  # a Python number is not an input
    assert zero_d.inputs == ((4, 6), ()) and zero_d.cost.read_bytes == 100  # a 0-d tensor is read: 96 + 4


@pytest.mark.parametrize(
    ("activation", "name", "flops_per_element", "transcendentals_per_element"),
    [
        (nn.ReLU(), "threshold_backward", 2, 0),  # x <= 0 ? 0 : dy
        (nn.GELU(), "gelu_backward", 11, 2),  # cdf 4 (erf), pdf 4 (exp), dy·(cdf + x·pdf) 3
        (nn.GELU("tanh"), "gelu_backward", 18, 1),
        (nn.SiLU(), "silu_backward", 9, 1),
        (nn.Sigmoid(), "sigmoid_backward", 3, 0),  # dy·(1 - y)·y
        (nn.Tanh(), "tanh_backward", 3, 0),  # dy·(1 - y²)
        (nn.Hardtanh(), "hardtanh_backward", 4, 0),
        (nn.LeakyReLU(), "leaky_relu_backward", 3, 0),
        (nn.ELU(), "elu_backward", 5, 1),  # x > 0 ? dy : dy·α·exp(x): compare, exp, 2 multiplies, select
        (nn.SELU(), "elu_backward", 6, 1),  # + the scale's multiply
        (nn.Softplus(), "softplus_backward", 7, 1),
        (nn.Mish(), "mish_backward", 13, 4),
        (nn.Hardswish(), "hardswish_backward", 7, 0),
    ],
)
def test_activation_backward_counts_via_autograd(activation, name, flops_per_element, transcendentals_per_element):
    x = torch.randn(4, 6, requires_grad=True)
    rec = record(backward_of(activation, x))
    op = rec.one(name)
    assert (op.cost.flops, op.cost.transcendentals) == (flops_per_element * E, transcendentals_per_element * E)
    assert op.cost.read_bytes == 2 * 96 and op.cost.write_bytes == 96  # dy and x (or y) read, dx written


def test_glu_backward_names_its_entry_and_writes_both_halves():
    x = torch.randn(4, 6, requires_grad=True)
    op = record(backward_of(nn.GLU(), x)).one("glu_backward")
    assert op.kind == "elementwise" and op.attrs["op"] == "glu_backward"
    # 12 gradient elements (4, 3), each giving the pair (da, db): s = sigmoid(b) 4, da 1, db 4
    assert (op.cost.flops, op.cost.transcendentals) == (9 * 12, 12)
    assert op.cost.read_bytes == 4 * (12 + 24)  # dy, then x's two halves a and b
    assert op.cost.write_bytes == 96  # x's gradient, 24 floats, written as its two halves


def test_fills_and_index_fills_write_only():
    x = torch.randn(4, 6)
    rec = record(
        lambda: (
            torch.zeros_like(x),
            torch.full((3, 5), 2.0),
            x.clone().zero_(),
            torch.arange(10),
            torch.linspace(0.0, 1.0, 7),
        )
    )
    # arange and linspace are index fills (start + i·step), 0 FLOPs as XLA counts iota
    for name, elements, nbytes in (
        ("zeros_like", 24, 96),
        ("full", 15, 60),
        ("zero_", 24, 96),
        ("arange", 10, 80),  # 10 int64 = 80 bytes
        ("linspace", 7, 28),  # 7 float32 = 28 bytes
    ):
        op = rec.one(name)
        assert op.inputs == () and op.cost.flops == 0 and math.prod(op.output) == elements
        assert (op.cost.read_bytes, op.cost.write_bytes) == (0, nbytes)
    assert rec.one("arange").attrs["op"] == rec.one("linspace").attrs["op"] == "arange"


# --- reductions -----------------------------------------------------------------------------


def test_reductions_closed_forms():
    x = torch.randn(4, 8, 16)  # 512 elements
    flags = x > 0
    with torch.no_grad():
        rec = record(
            lambda: (
                x.sum(),
                x.mean(1),
                x.var(2),
                x.std(),
                x.norm(),
                x.norm(p=3, dim=1),
                x.logsumexp(2),
                flags.any(),
                x.max(1),
                torch.aminmax(x),
            )
        )
    assert rec.one("sum").cost.flops == 511  # 512 → 1: 511 adds
    mean = rec.one("mean")
    assert mean.output == (4, 16) and mean.cost.flops == 512  # 64 outputs * (7 adds + 1 divide)
    var = rec.one("var")
    assert var.attrs["axes"] == (2,)
    assert var.cost.flops == 32 * 4 * 16  # two-pass, 4L per output: mean L, centre L, square L, sum L-1, divide 1
    std = rec.one("std")
    assert (std.cost.flops, std.cost.transcendentals) == (4 * 512 + 1, 1)  # var of all 512 + a root
    norms = rec.records("linalg_vector_norm")
    assert (norms[0].cost.flops, norms[0].cost.transcendentals) == (2 * 512, 1)  # 512 squares + 511 adds + 1 root
    # p = 3 over L = 8 for 64 outputs: |x| 8 + exp(3·log|x|) 24 + 7 adds + root 3 = 42 per output
    assert (norms[1].cost.flops, norms[1].cost.transcendentals) == (64 * 42, 64 * (2 * 8 + 2))
    lse = rec.one("logsumexp")
    assert (lse.cost.flops, lse.cost.transcendentals) == (32 * 4 * 16, 32 * 17)  # 4L; L exps + 1 log per row
    assert rec.one("any").cost.flops_by_dtype == {"bool": 511}  # or over 512 flags
    by_dim = rec.records("max")[-1]
    assert by_dim.extra_outputs == ((4, 16),) and by_dim.extra_output_dtypes == ("int64",)
    assert by_dim.cost.flops == 64 * 7  # 7 comparisons per output; indices written, not counted
    assert rec.one("aminmax").cost.flops == 2 * 511  # two running extremes


# --- norms ------------------------------------------------------------------------------------


def test_layer_norm_forward_and_backward():
    x = torch.randn(4, 8, 16, requires_grad=True)  # 32 rows of L = 16; E = 512
    rec = record(backward_of(nn.LayerNorm(16), x))
    forward = rec.one("native_layer_norm")
    assert forward.kind == "layernorm" and forward.extra_outputs == ((4, 8, 1), (4, 8, 1))  # mean, rstd
    assert forward.cost.flops == 32 * (5 * 16 + 2) + 2 * 512  # stats 5L+2 per row; weight and bias 1 each
    assert (forward.cost.read_bytes, forward.cost.write_bytes) == (2048 + 64 + 64, 2048 + 128 + 128)
    backward = rec.one("native_layer_norm_backward")
    assert backward.kind == "norm_backward" and backward.attrs["norm"] == "layer"
    # x̂ 2E + grad_input 7E + E (γ) + grad_weight 2E - 16 + grad_bias E - 16 = 13E - 32 = 6,624
    assert backward.cost.flops == 13 * 512 - 32
    assert backward.cost.read_bytes == 2048 + 2048 + 128 + 128 + 64  # dy, x, mean, rstd, γ (bias unread)
    assert backward.cost.write_bytes == 2048 + 64 + 64


def test_batch_norm_train_and_eval():
    x = torch.randn(2, 6, 5, 5, requires_grad=True)  # C = 6, L = 50 per channel, E = 300
    train = record(backward_of(nn.BatchNorm2d(6), x))
    forward = train.one("native_batch_norm")
    assert forward.attrs["training"] is True and forward.attrs["affine"] is True
    # stats 6 * (5·50 + 2) = 1,512 + running stats 4·6 = 24 + scale and shift 2·300 = 600
    assert forward.cost.flops == 1_512 + 24 + 600
    assert forward.cost.read_bytes == 1200 + 4 * 24  # x, γ, β, running mean and var
    assert forward.cost.write_bytes == 1200 + 4 * 24  # y, saved mean/invstd, running stats updated in place
    assert train.one("native_batch_norm_backward").cost.flops == 13 * 300 - 2 * 6  # as layer norm, P = C
    assert train.one("add_").cost.flops_by_dtype == {"int64": 1}  # num_batches_tracked += 1

    module = nn.BatchNorm2d(6).eval()
    evaluation = record(backward_of(module, x))
    forward = evaluation.one("native_batch_norm")
    assert forward.attrs["training"] is False
    # folded as the CPU kernel runs it: per channel scale = γ·rsqrt(var + eps), shift = β - mean·scale
    # (5 per channel), then y = x·scale + shift (2 per element): 2·300 + 5·6 = 630 (was 1,212)
    assert forward.cost.flops == 2 * 300 + 5 * 6
    backward = evaluation.one("native_batch_norm_backward")
    # rstd 2C + dy·γ·rstd 2E; x̂ 2E + Σ dy·x̂ 2E - C; Σ dy E - C
    assert backward.cost.flops == (12 + 600) + (600 + 600 - 6) + (300 - 6)
    assert backward.cost.transcendentals == 6


def test_group_norm_forward_and_backward():
    x = torch.randn(2, 6, 5, 5, requires_grad=True)  # 2 samples × 3 groups of L = 2·25 = 50
    rec = record(backward_of(nn.GroupNorm(3, 6), x))
    forward = rec.one("native_group_norm")
    assert forward.attrs["groups"] == 3 and forward.extra_outputs == ((2, 3), (2, 3))
    assert forward.cost.flops == 6 * (5 * 50 + 2) + 2 * 300
    assert rec.one("native_group_norm_backward").cost.flops == 13 * 300 - 2 * 6


def test_rms_norm_decomposed_adds_up_to_the_rmsnorm_rule():
    x = torch.randn(4, 8, 16)  # 32 rows of L = 16
    module = nn.RMSNorm(16)
    with torch.no_grad():
        decomposed = record(lambda: module(x))
    names = [call.name for call, _ in decomposed.calls]
    assert names == ["pow", "mean", "add_", "rsqrt", "mul", "mul"]
    total = sum(op.cost.flops for _, ops in decomposed.calls for op in ops)
    # x² E, mean L per row, +eps, rsqrt per row, x·r E, ·γ E = 4E + 2·rows = rows·(4L + 2)
    assert total == 32 * (4 * 16 + 2) == 2_112
    fused = record(lambda: module(x), inference=True)  # rms_norm dispatches whole under inference_mode
    op = fused.one("rms_norm")
    assert op.kind == "rmsnorm" and op.cost.flops == total  # 3L+2 per row + L for the weight


def test_fused_rms_norm_forward_and_backward_counts():
    # the fused kernels run on CUDA; meta tensors carry the shapes through the same table (the
    # forward is composite on the CPU: it dispatches whole under inference_mode)
    x, weight, grad = (torch.empty(*shape, device="meta") for shape in ((4, 16), (16,), (4, 16)))
    rstd = torch.empty(4, 1, device="meta")
    rec = record(
        lambda: (
            torch.ops.aten._fused_rms_norm(x, [16], weight, 1e-6),
            torch.ops.aten._fused_rms_norm_backward(grad, x, [16], rstd, weight, [True, True]),
        ),
        inference=True,
    )
    forward = rec.one("_fused_rms_norm")
    assert forward.kind == "rmsnorm" and forward.extra_outputs == ((4, 1),)  # rstd
    assert forward.cost.flops == 4 * (3 * 16 + 2) + 64  # 3L+2 per row, + L for the weight
    # x̂ = x·rstd E; grad_input 5E + E (γ); grad_weight 2E - 16: E = 64
    assert rec.one("_fused_rms_norm_backward").cost.flops == 64 + 6 * 64 + 2 * 64 - 16


# --- softmax ----------------------------------------------------------------------------------


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_forward_and_backward(log):
    x = torch.randn(4, 10, requires_grad=True)  # 4 rows of L = 10
    fn = F.log_softmax if log else F.softmax
    rec = record(lambda: (fn(x, -1) * torch.arange(10.0)).sum().backward())
    forward = rec.one("_log_softmax" if log else "_softmax")
    assert forward.kind == "softmax" and forward.attrs["log"] is log
    assert forward.cost.flops == 4 * (5 * 10 - (1 if log else 2))  # max, subtract, exp, sum, divide (or log, sub)
    backward = rec.one("_log_softmax_backward_data" if log else "_softmax_backward_data")
    assert backward.cost.flops == 4 * (4 * 10 - 1)  # y·(g - Σg·y) or g - exp(y)·Σg: 4L - 1 per row
    assert backward.cost.transcendentals == (40 if log else 0)
    assert (backward.cost.read_bytes, backward.cost.write_bytes) == (320, 160)


def test_safe_softmax_of_the_attention_math_path():
    x = torch.randn(2, 3, 5)
    x[0, 0] = -math.inf  # a fully masked row comes out as zeros
    rec = record(lambda: torch.ops.aten._safe_softmax(x, -1))
    op = rec.one("_safe_softmax")
    assert op.kind == "safe_softmax"
    # 6 rows of L = 5: softmax 5L-2 = 23, + L compares with -inf, L-1 ands, L selects = 8L-3 = 37
    assert (op.cost.flops, op.cost.transcendentals) == (6 * 37, 6 * 5)


# --- pooling ----------------------------------------------------------------------------------


def test_max_pool_forward_and_backward():
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    rec = record(backward_of(nn.MaxPool2d(2), x))
    forward = rec.one("max_pool2d_with_indices")
    assert forward.attrs["kernel"] == (2, 2) and forward.attrs["stride"] == (2, 2)
    assert forward.cost.flops == 96 * 3  # (2,3,4,4) = 96 outputs, 3 comparisons each
    assert forward.cost.write_bytes == 96 * 4 + 96 * 8  # values and int64 indices
    backward = rec.one("max_pool2d_with_indices_backward")
    assert backward.cost.flops == 96  # one add per gradient at its saved index
    assert (backward.cost.read_bytes, backward.cost.write_bytes) == (96 * 4 + 96 * 8, 384 * 4)

    ceil = record(lambda: nn.MaxPool2d(3, 2, 1, ceil_mode=True)(x.detach()))
    # (8 + 2 - 3) / 2 = 3.5 → ceil 4, + 1 = 5 per side; the last window starts at 8 < 8 + 1: kept
    assert ceil.one("max_pool2d_with_indices").output == (2, 3, 5, 5)
    assert ceil.one("max_pool2d_with_indices").cost.flops == 150 * 8


def test_avg_and_adaptive_pooling_forward_and_backward():
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    avg = record(backward_of(nn.AvgPool2d(3, 2, 1), x))
    assert avg.one("avg_pool2d").cost.flops == 96 * 9  # (8 + 2 - 3)//2 + 1 = 4 per side; 9 per output
    assert avg.one("avg_pool2d_backward").cost.flops == 96 * (9 + 1)  # a divide and 9 adds per gradient

    even = record(backward_of(nn.AdaptiveAvgPool2d(4), x))
    forward = even.one("_adaptive_avg_pool2d")
    assert forward.kind == "pooling" and forward.attrs["kernel"] == (2, 2)  # 8 → 4 tiles evenly
    assert forward.cost.flops == 96 * 4
    assert even.one("_adaptive_avg_pool2d_backward").cost.flops == 6 * (8 * 8 + 16)  # adds over windows + divides

    uneven = record(backward_of(nn.AdaptiveAvgPool2d(3), x))
    # 8 → 3: windows [0,3) [2,6) [5,8) = 3 + 4 + 3 = 10 per dim; 6 planes × 10·10
    assert adaptive_windows(8, 3) == [3, 4, 3]
    assert uneven.one("_adaptive_avg_pool2d").kind == "adaptive_pooling"
    assert uneven.one("_adaptive_avg_pool2d").cost.flops == 6 * 100
    assert uneven.one("_adaptive_avg_pool2d_backward").cost.flops == 6 * (100 + 9)

    peak = record(backward_of(nn.AdaptiveMaxPool2d(3), x))
    assert peak.one("adaptive_max_pool2d").cost.flops == 6 * (100 - 9)  # window - 1 comparisons per output
    assert peak.one("adaptive_max_pool2d_backward").cost.flops == 54


def test_max_pool_1d_goes_through_the_2d_kernel():
    x = torch.randn(2, 3, 10)
    rec = record(lambda: nn.MaxPool1d(2)(x))
    assert rec.free == ["unsqueeze", "squeeze", "squeeze"]
    op = rec.one("max_pool2d_with_indices")
    assert op.inputs == ((2, 3, 1, 10),) and op.cost.flops == 30  # 30 outputs, 1 comparison each


# --- random numbers ---------------------------------------------------------------------------

MT = 18  # integer ops per 32-bit mt19937 output


def test_random_ops_on_the_cpu_generator():
    rec = record(
        lambda: (
            torch.randn(4, 5),
            torch.rand(10),
            torch.randint(0, 10, (8,)),
            torch.randint(0, 1 << 40, (8,)),
            torch.randperm(7),
            torch.empty(10).bernoulli_(0.3),
            torch.bernoulli(torch.full((10,), 0.5)),
            torch.empty(10).exponential_(),
        )
    )
    randn = rec.one("randn")
    assert randn.attrs["generator"] == "mt19937" and randn.attrs["bits_per_element"] == 32
    # 20 draws of 32 bits; Box-Muller 10 FLOPs and 2 transcendentals per element
    assert randn.cost.flops_by_dtype == {"uint32": 20 * MT, F32: 200}
    assert randn.cost.transcendentals == 40
    assert rec.one("rand").cost.flops_by_dtype == {"uint32": 10 * MT, F32: 30}  # bits·2^-24, ·(to-from), +from
    small, wide = rec.records("randint")
    assert small.cost.flops_by_dtype == {"uint32": 8 * MT, "int64": 16}  # range < 2^28: 32 bits; % and +
    assert wide.cost.flops_by_dtype == {"uint32": 16 * MT, "int64": 16}  # range ≥ 2^28: 64 bits
    assert rec.one("randperm").cost.flops_by_dtype == {"uint32": 7 * MT, "int64": 7}
    scalar_p = rec.one("bernoulli_")
    assert scalar_p.cost.flops_by_dtype == {"uint32": 20 * MT, "float64": 40}  # bernoulli_distribution<double>
    tensor_p = rec.one("bernoulli")
    assert tensor_p.inputs == ((10,),) and tensor_p.cost.flops_by_dtype == {"uint32": 10 * MT, F32: 40}
    exponential = rec.one("exponential_")
    assert exponential.cost.flops_by_dtype == {"uint32": 20 * MT, "float64": 70}
    assert exponential.cost.transcendentals == 10
    assert rec.free.count("empty") == 2


def test_dropout_in_training_mode():
    x = torch.randn(4, 10, requires_grad=True)
    rec = record(backward_of(nn.Dropout(0.25), x))
    assert "empty_like" in rec.free
    mask = rec.one("bernoulli_")  # keep with p = 0.75, drawn as a double per element on the CPU
    assert mask.cost.flops_by_dtype == {"uint32": 2 * 40 * MT, "float64": 4 * 40}
    assert mask.cost.write_bytes == 160 and mask.cost.read_bytes == 0
    assert rec.one("div_").cost.flops == 40  # mask / 0.75
    assert rec.flops("mul") == 2 * 40  # forward x·mask, backward dy·mask


def test_native_dropout_and_its_backward():
    x = torch.randn(4, 10)
    rec = record(
        lambda: (
            torch.ops.aten.native_dropout(x, 0.5, True),
            torch.ops.aten.native_dropout(x, 0.5, False),
            torch.ops.aten.native_dropout_backward(x, x > 0, 2.0),
        )
    )
    train, evaluation = rec.records("native_dropout")
    assert train.kind == "rng" and train.extra_output_dtypes == ("bool",)
    assert train.cost.flops_by_dtype == {"uint32": 40 * MT, F32: 6 * 40}  # uniform 3, compare, ·mask, ·scale
    assert (train.cost.read_bytes, train.cost.write_bytes) == (160, 160 + 40)
    assert evaluation.kind == "copy" and evaluation.cost.flops == 0
    assert rec.one("native_dropout_backward").cost.flops == 2 * 40  # dy·mask·scale


# --- losses -----------------------------------------------------------------------------------


def test_cross_entropy_and_mse_forward_and_backward():
    logits = torch.randn(4, 5, requires_grad=True)
    target = torch.tensor([1, 2, 3, 0])
    rec = record(lambda: F.cross_entropy(logits, target).backward())
    assert rec.one("_log_softmax").cost.flops == 4 * (5 * 5 - 1)
    nll = rec.one("nll_loss_forward")
    # per target: ignore test, negate (2); mean: 3 loss adds + 3 weight adds + 1 divide
    assert nll.cost.flops == 4 * 2 + 3 + 3 + 1
    assert nll.cost.read_bytes == 4 * 4 + 4 * 8  # the 4 picked log-probabilities and the targets, not all 20
    assert rec.one("nll_loss_backward").cost.flops == 4 * 4  # ignore test, negate, ·dy, ÷total_weight

    x, y = torch.randn(4, 8, requires_grad=True), torch.randn(4, 8)
    mse = record(lambda: F.mse_loss(x, y).backward())
    forward = mse.one("mse_loss")
    assert forward.kind == "reduce" and forward.cost.flops == 2 * 32 + 31 + 1  # (x-t)² per element, sum, divide
    assert mse.one("mse_loss_backward").cost.flops == 4 * 32  # 2·(x-t)·dy / n


# --- optimizers -------------------------------------------------------------------------------


def _model():
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))  # 12 + 3 + 6 + 2 = 23 parameters
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    return model


P = 23


def test_fused_adam_step():
    optimizer = torch.optim.Adam(_model().parameters(), lr=1e-3, fused=True)
    rec = record(optimizer.step)
    step = rec.one("_fused_adam_")
    assert step.kind == "elementwise" and step.output == (P,)
    # exp_avg lerp 3, exp_avg_sq 4, denominator 3 (sqrt, ÷bias correction, +eps), update 3 = 13
    assert (step.cost.flops, step.cost.transcendentals) == (13 * P, P)
    assert step.cost.read_bytes == 4 * P * 4  # param, grad, exp_avg, exp_avg_sq
    assert step.cost.write_bytes == 3 * P * 4  # param, exp_avg, exp_avg_sq
    assert rec.one("_foreach_add_").cost.flops == 4  # one step counter per parameter tensor
    assert len(rec.records("zeros_like")) == 8  # state created on the first step: writes only
    assert rec.unmodeled == []

    decayed = torch.optim.AdamW(_model().parameters(), weight_decay=0.1, amsgrad=True, fused=True)
    step = record(decayed.step).one("_fused_adamw_")
    assert step.cost.flops == (13 + 1 + 1) * P  # + p·(1 - lr·λ), + max for amsgrad
    assert step.cost.read_bytes == 5 * P * 4 and step.cost.write_bytes == 4 * P * 4


def test_foreach_and_single_tensor_adam_match_the_fused_count():
    foreach = torch.optim.Adam(_model().parameters(), lr=1e-3, foreach=True)
    foreach.step()  # state created
    rec = record(foreach.step)
    lists = ["_foreach_lerp_", "_foreach_mul_", "_foreach_addcmul_", "_foreach_sqrt", "_foreach_div_",
             "_foreach_addcdiv_"]  # fmt: skip
    per_op = [rec.one(name).cost.flops for name in lists]
    assert per_op == [3 * P, P, 3 * P, P, P, 3 * P]  # each list flattened to one record of 23 elements
    eps = [op for op in rec.records("_foreach_add_") if op.output == (P,)]
    assert sum(per_op) + eps[0].cost.flops == 13 * P  # the fused kernel's 13 per element
    assert rec.one("_foreach_sqrt").cost.transcendentals == P
    # each record names the catalog entry that counts it, as the single-tensor op does
    assert [rec.one(name).attrs["op"] for name in lists] == ["lerp", "mul", "addcmul", "sqrt", "div", "addcdiv"]
    assert len(rec.records("_local_scalar_dense")) == 8  # step.item() per tensor: copies of one element
    assert rec.unmodeled == []

    single = torch.optim.Adam(_model().parameters(), lr=1e-3, foreach=False)
    single.step()
    rec = record(single.step)
    update = sum(op.cost.flops for _, ops in rec.calls for op in ops if op.output not in ((),))
    assert update == 13 * P  # lerp_ 3, mul_ 1, addcmul_ 3, sqrt 1, div 1, add_ 1, addcdiv_ 3 per element


def test_fused_sgd_and_foreach_with_mixed_dtypes():
    model = _model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
    first = record(sgd.step).one("_fused_sgd_")
    assert first.cost.flops == 2 * P  # p - lr·g; the buffer is a copy of g on the first step
    assert first.cost.read_bytes == 2 * P * 4 and first.cost.write_bytes == 2 * P * 4  # p, g in; p, buffer out
    later = record(sgd.step).one("_fused_sgd_")
    assert later.cost.flops == (2 + 3) * P and later.cost.read_bytes == 3 * P * 4  # μ·b + (1-d)·g; buffer read

    mixed = [torch.randn(3, 4), torch.randn(5, dtype=torch.float64)]
    rec = record(lambda: torch._foreach_mul_(mixed, 2.0))
    op = rec.one("_foreach_mul_")
    assert op.kind == "foreach_elementwise" and op.cost.flops_by_dtype == {F32: 12, "float64": 5}
    assert op.attrs["op"] == "mul"  # counted by the catalog's mul: 1 per element of each tensor
    assert op.cost.read_bytes == 48 + 40 and op.cost.write_bytes == 48 + 40


def test_clip_grad_norm_and_zero_grad():
    model = _model()
    rec = record(lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    norms = rec.one("_foreach_norm")
    assert norms.cost.flops == 2 * P and norms.cost.transcendentals == 4  # squares + adds + a root per tensor
    assert rec.one("_foreach_mul_").cost.flops == P  # grads scaled by a 0-d tensor
    zeroed = record(lambda: model.zero_grad(set_to_none=False))
    assert [op.cost.write_bytes for op in zeroed.records("zero_")] == [48, 12, 24, 8]
    assert all(op.cost.read_bytes == 0 for op in zeroed.records("zero_"))


# --- inference_mode: composite ops dispatch whole -------------------------------------------------


def test_composite_ops_under_inference_mode():
    x = torch.randn(2, 6, 4, 4)
    model = nn.Sequential(nn.BatchNorm2d(6).eval(), nn.GroupNorm(3, 6), nn.Dropout(0.1).eval(), nn.MaxPool2d(2))
    rec = record(lambda: (model(x), nn.LayerNorm(4)(x), F.softmax(x, 1), nn.InstanceNorm2d(6)(x)), inference=True)
    assert rec.one("batch_norm").kind == "batchnorm"
    assert rec.one("group_norm").cost.flops == 6 * (5 * 32 + 2) + 2 * 192
    assert "dropout" in rec.free  # not training: the input itself
    assert rec.one("max_pool2d").cost.flops == 48 * 3
    assert rec.one("layer_norm").cost.flops == 48 * (5 * 4 + 2) + 2 * 192
    assert rec.one("softmax").cost.flops == 32 * (5 * 6 - 2)
    assert rec.one("instance_norm").attrs["groups"] == 6  # per (sample, channel) statistics
    assert rec.one("instance_norm").cost.flops == 12 * (5 * 16 + 2)  # no affine
    assert rec.unmodeled == []
