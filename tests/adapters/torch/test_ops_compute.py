"""The aten table's contractions, convolutions, attention and recurrent kernels, and its
data movement, on real modules and functions.

Each test runs PyTorch under a small recording dispatch mode, lowers each call through its
table entry and checks kinds and exact FLOPs and bytes against the closed form written
beside. For every op FlopCounterMode counts (mm, addmm, bmm, baddbmm, convolution,
convolution_backward, the sdpa kernels), our matmul/conv FLOPs — attention's dense FLOPs —
for that call equal FlopCounterMode's count for the same call replayed under it, except
where the docstrings of ops_compute say why not (grouped conv weight gradients; the
(B, S, H, D) kernels' layout). CUDA-only kernels run on meta tensors.
"""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
aten = torch.ops.aten

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from neural_cost.adapters._torch import (  # noqa: E402  (registers the entries)
    ops_attention,
    ops_conv,
    ops_indexing,
    ops_matmul,
    ops_movement,
    ops_rnn,
)
from neural_cost.adapters._torch.table import EMPTY_REASONS, TABLE, AtenCall, TorchContext  # noqa: E402

OURS = {m.__name__ for m in (ops_matmul, ops_conv, ops_attention, ops_rnn, ops_indexing, ops_movement)}


class Recording(TorchDispatchMode):
    """Every aten call as an AtenCall, lowered through its table entry as it runs (as the
    tracer does: a later in-place op cannot change what the builder saw)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        call = AtenCall(func, tuple(args), dict(kwargs), out)
        entry = TABLE.get(call.name)
        ours = getattr(entry, "__module__", None) in OURS  # other tables are tested elsewhere
        self.calls.append((call, lower(call) if ours else None))
        return out


def lower(call):
    return list(TABLE[call.name](call, TorchContext("scope")))


def recorded(fn):
    """(call, its records, or None when this module has no builder for it) for every call."""
    recording = Recording()
    with recording:
        fn()
    return recording.calls


def lowered(fn, name):
    """(call, records) for every call of the op packet ``name`` that ``fn`` runs."""
    found = [(call, records) for call, records in recorded(fn) if call.name == name]
    assert found, f"no aten.{name} call"
    return found


def only(fn, name):
    (pair,) = lowered(fn, name)
    return pair


def flop_counter(call):
    """FlopCounterMode's count for this one call, replayed under it."""
    with FlopCounterMode(display=False) as counter:
        call.func(*call.args, **call.kwargs)
    return counter.get_flop_counts().get("Global", {}).get(call.func.overloadpacket, 0)


def flops(records, kind=None, name=None):
    return sum(
        op.cost.flops * op.count
        for op in records
        if (kind is None or op.kind == kind) and (name is None or op.name == name)
    )


def by_name(records):
    return {op.name: op for op in records}


def meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, device="meta", dtype=dtype)


# --- matrix products --------------------------------------------------------------------


def test_linear_with_bias_is_a_matmul_plus_its_own_bias_record():
    layer = nn.Linear(64, 32)
    x = torch.randn(8, 64)
    call, records = only(lambda: layer(x), "addmm")
    ops = by_name(records)
    assert [op.kind for op in records] == ["matmul", "elementwise"]
    assert ops["addmm"].cost.flops == 32_768 == flop_counter(call)  # 2 * 8 * 64 * 32
    assert ops["addmm"].cost.read_bytes == 10_240  # 4 * (8*64 + 64*32) = 4 * (512 + 2,048)
    assert ops["addmm"].cost.write_bytes == 1_024  # 4 * 8 * 32
    assert ops["addmm.bias"].cost.flops == 256  # one add per output element: 8 * 32
    assert ops["addmm.bias"].inputs == ((8, 32), (32,))
    assert ops["addmm"].scope == "scope"


def test_linear_without_bias_is_one_mm():
    layer = nn.Linear(64, 32, bias=False)
    call, records = only(lambda: layer(torch.randn(2, 3, 64)), "mm")
    (op,) = records
    assert (op.kind, op.inputs, op.output) == ("matmul", ((6, 64), (64, 32)), (6, 32))
    assert op.cost.flops == 24_576 == flop_counter(call)  # 2 * 6 * 64 * 32


def test_addmm_counts_beta_and_alpha_honestly():
    bias, a, b = torch.randn(5), torch.randn(3, 4), torch.randn(4, 5)
    _, scaled = only(lambda: torch.addmm(bias, a, b, beta=0.5, alpha=2.0), "addmm")
    assert scaled[1].attrs["flops_per_element"] == 3  # add, beta·bias, alpha·product
    assert scaled[1].cost.flops == 45  # 3 * 3 * 5
    _, plain = only(lambda: torch.addmm(bias, a, b, beta=0), "addmm")
    assert [op.kind for op in plain] == ["matmul"]  # beta = 0 ignores the bias; alpha = 1: nothing else
    _, alpha_only = only(lambda: torch.addmm(bias, a, b, beta=0, alpha=3), "addmm")
    assert alpha_only[1].inputs == ((3, 5),)  # the bias is not read
    assert alpha_only[1].cost.flops == 15  # one multiply per element


def test_batched_and_vector_products():
    x, y = torch.randn(4, 3, 6), torch.randn(4, 6, 5)
    call, (bmm,) = only(lambda: torch.bmm(x, y), "bmm")
    assert bmm.cost.flops == 720 == flop_counter(call)  # 2 * 4 * 3 * 6 * 5
    call, records = only(lambda: torch.baddbmm(torch.randn(3, 5), x, y), "baddbmm")
    assert flops(records, "matmul") == 720 == flop_counter(call)
    assert flops(records, "elementwise") == 60  # the bias add: 4 * 3 * 5
    call, (addbmm, bias) = only(lambda: torch.addbmm(torch.randn(3, 5), x, y), "addbmm")
    assert addbmm.output == (3, 5) and addbmm.cost.flops == 720  # the batch sum is the accumulation: 2·3·5·(4·6)
    assert bias.cost.flops == 15
    assert flop_counter(call) == 0  # FlopCounterMode has no addbmm formula
    _, (mv,) = only(lambda: torch.mv(torch.randn(3, 4), torch.randn(4)), "mv")
    _, (dot,) = only(lambda: torch.dot(torch.randn(4), torch.randn(4)), "dot")
    assert (mv.cost.flops, dot.cost.flops) == (24, 8)  # 2 * 3 * 4; 2 * 4


def test_fp8_scaled_mm_charges_the_product_to_fp8_and_dequantises_after():
    a, b = meta(16, 32, dtype=torch.float8_e4m3fn), meta(64, 32, dtype=torch.float8_e4m3fn).t()
    scale = meta((), dtype=torch.float32)
    call, (product, dequant) = only(lambda: aten._scaled_mm(a, b, scale, scale, out_dtype=torch.bfloat16), "_scaled_mm")
    assert product.cost.flops_by_dtype == {"float8_e4m3fn": 65_536} and flop_counter(call) == 65_536  # 2·16·32·64
    assert dequant.cost.flops_by_dtype == {"bfloat16": 2 * 16 * 64}  # scale_a and scale_b per output element


def test_grouped_mm_counts_each_row_column_or_contracted_index_once_in_its_group():
    """``_grouped_mm``'s four layouts on the CPU (float32; ATen wants 16-byte strides), checked against the
    per-group products they compute (FlopCounterMode has no formula for it: 0)."""
    offs = torch.tensor([4, 16], dtype=torch.int32)  # two groups: indices 0–3 and 4–15 of the split dim
    a, w = torch.randn(16, 8), torch.randn(2, 8, 8)
    call, (rows,) = only(lambda: torch._grouped_mm(a, w, offs), "_grouped_mm")
    assert torch.allclose(call.out[4:], a[4:] @ w[1]) and flop_counter(call) == 0
    assert rows.kind == "grouped_matmul" and rows.output == (16, 8)
    assert rows.cost.flops == 2048  # 2 · M · K · N = 2 · 16 · 8 · 8: 4 rows through group 0, 12 through group 1
    assert rows.cost.read_bytes == 4 * (128 + 128) + 4 * 2 and rows.cost.write_bytes == 4 * 128  # offs: 2 int32
    _, (columns,) = only(lambda: torch._grouped_mm(torch.randn(2, 16, 8), torch.randn(8, 16), offs), "_grouped_mm")
    assert columns.output == (16, 16) and columns.cost.flops == 4096  # 2 · M · K · N_total = 2 · 16 · 8 · 16
    call, (contracted,) = only(lambda: torch._grouped_mm(torch.randn(16, 16), torch.randn(16, 8), offs), "_grouped_mm")
    assert contracted.output == (2, 16, 8) == tuple(call.out.shape)
    assert contracted.cost.flops == 4096  # 2 · M · K_total · N = 2 · 16 · 16 · 8: one output per group
    _, (batch,) = only(lambda: torch._grouped_mm(torch.randn(2, 16, 8), torch.randn(2, 8, 8)), "_grouped_mm")
    assert batch.output == (2, 16, 8) and batch.cost.flops == 4096  # a bmm: 2 · G · M · K · N = 2 · 2 · 16 · 8 · 8


# --- convolution ------------------------------------------------------------------------


def test_grouped_strided_conv2d():
    conv = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)
    call, records = only(lambda: conv(torch.randn(2, 4, 9, 9)), "convolution")
    op, bias = records
    assert op.kind == "conv" and op.output == (2, 8, 5, 5)
    assert op.attrs["groups"] == 2 and op.attrs["stride"] == (2, 2)
    # 2 · output elements · (C_in/groups) · kh · kw = 2 · (2·8·5·5) · 2 · 9 = 14,400
    assert op.cost.flops == 14_400 == flop_counter(call)
    assert bias.inputs == ((2, 8, 5, 5), (8, 1, 1)) and bias.cost.flops == 400


def test_conv_transpose2d():
    conv = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    call, (op, _) = only(lambda: conv(torch.randn(2, 4, 5, 5)), "convolution")
    assert op.attrs["transposed"] is True and op.output == (2, 6, 10, 10)
    # 2 · N · prod(input spatial) · C_in · (C_out/groups) · prod(kernel) = 2 · 2 · 25 · 4 · 3 · 9 = 10,800
    assert op.cost.flops == 10_800 == flop_counter(call)


def test_unbatched_conv1d_gets_a_batch_of_one():
    call, (op, bias) = only(lambda: F.conv1d(torch.randn(3, 10), torch.randn(4, 3, 3), torch.randn(4)), "convolution")
    assert op.cost.flops == 576 == flop_counter(call)  # 2 · (4·8) · 3 · 3
    assert bias.inputs[1] == (4, 1)


@pytest.mark.parametrize(
    "module, shape",
    [
        (nn.Conv2d(4, 8, 3, stride=2, padding=1, dilation=2), (2, 4, 10, 9)),  # the last row and column unused
        (nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1), (2, 4, 5, 5)),
        (nn.Conv3d(2, 4, (2, 3, 3), stride=(1, 2, 1), padding=(0, 1, 1)), (1, 2, 4, 7, 6)),
        (nn.Conv1d(3, 5, 4, stride=3), (2, 3, 20)),
    ],
)
def test_conv_backward_equals_flop_counter_for_ungrouped_convs(module, shape):
    x = torch.randn(*shape, requires_grad=True)
    forward = only(lambda: module(x).sum().backward(), "convolution")[1][0]
    call, records = only(lambda: module(x).sum().backward(), "convolution_backward")
    ops = by_name(records)
    assert ops["convolution_backward.grad_input"].output == tuple(x.shape)
    # grad_input and grad_weight each cost what the forward does
    assert ops["convolution_backward.grad_input"].cost.flops == forward.cost.flops
    # a transposed layer's weight gradient is named apart (kernel_classes reads the layer's width off it)
    transposed = isinstance(module, nn.ConvTranspose2d)
    assert ops["convolution_backward.grad_weight" + ("_of_transposed" if transposed else "")].cost.flops == (
        forward.cost.flops
    )
    assert flops(records, "conv") == 2 * forward.cost.flops == flop_counter(call)
    out = call.args[0]
    # grad_bias: a sum over N and the spatial dims: elements - channels adds
    assert ops["convolution_backward.grad_bias"].cost.flops == out.numel() - out.shape[1]


def test_grouped_conv_weight_gradient_is_its_work_not_groups_times_it():
    conv = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)
    x = torch.randn(2, 4, 9, 9, requires_grad=True)
    call, records = only(lambda: conv(x).sum().backward(), "convolution_backward")
    ops = by_name(records)
    forward = 14_400  # as in test_grouped_strided_conv2d
    assert ops["convolution_backward.grad_input"].cost.flops == forward
    grad_weight = ops["convolution_backward.grad_weight"]
    assert grad_weight.attrs["batch_groups"] == 2
    assert grad_weight.cost.flops == forward  # 2 · (C_in/g) · C_out · k² · N · out spatial = 2·2·8·9·2·25
    # FlopCounterMode's weight term swaps channels and batch and loses the group division:
    # groups × the work (pytorch/pytorch#183405): 14,400 + 2 · 14,400
    assert flop_counter(call) == forward + 2 * forward == 43_200


def test_conv_backward_follows_the_output_mask():
    conv = nn.Conv2d(3, 4, 3, bias=False).requires_grad_(False)
    x = torch.randn(1, 3, 6, 6, requires_grad=True)
    call, records = only(lambda: conv(x).sum().backward(), "convolution_backward")
    assert [op.name for op in records] == ["convolution_backward.grad_input"]
    assert flops(records) == 2 * 16 * 4 * 3 * 9 == flop_counter(call)  # 2 · (4·4·4) · 3 · 3·3 = 3,456
    nothing = AtenCall(call.func, (*call.args[:10], [False, False, False]), {}, (None, None, None))
    assert lower(nothing) == [] and "output_mask" in EMPTY_REASONS["convolution_backward"]


# --- attention --------------------------------------------------------------------------


def test_causal_grouped_query_sdpa_on_the_cpu_kernel():
    q = torch.randn(2, 8, 16, 32, requires_grad=True)
    k, v = torch.randn(2, 2, 16, 32, requires_grad=True), torch.randn(2, 2, 16, 32, requires_grad=True)
    calls = {
        call.name: (call, records)
        for call, records in recorded(
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True).sum().backward()
        )
    }
    forward_call, (op,) = calls["_scaled_dot_product_flash_attention_for_cpu"]
    assert op.kind == "attention" and op.inputs == ((2, 8, 16, 32), (2, 2, 16, 32), (2, 2, 16, 32))
    assert op.attrs["causal"] and op.attrs["skips_masked"] and op.attrs["causal_alignment"] == "top_left"
    # the CPU kernel skips tiles of 32 queries × 512 keys (clamped to 16 × 16), not pairs: its one
    # tile is touched by the mask, so every pair runs (Σ_{i<16} (i+1) = 136 only if it skipped pairs)
    assert op.attrs["causal_blocks"] == (32, 512)
    pairs = 16 * 16
    # matmuls 2·(32+32) + 1 scale + 5 softmax per pair, less 2 per query row: 16·(256·134 − 32)
    assert op.cost.flops == 2 * 8 * (pairs * (2 * (32 + 32) + 6) - 2 * 16) == 548_352
    assert op.cost.dense_flops == 2 * 2 * 8 * 16 * 16 * (32 + 32) == 524_288
    assert op.cost.transcendentals == 2 * 8 * pairs
    assert op.cost.read_bytes == 4 * (8_192 + 2_048 + 2_048)  # q, k, v once: 49,152
    assert op.cost.write_bytes == 4 * (8_192 + 2 * 8 * 16)  # output + log-sum-exp: 33,792
    # FlopCounterMode has no formula for the CPU kernel; on the CUDA flash kernel, same shapes:
    assert flop_counter(forward_call) == 0
    with FlopCounterMode(display=False) as counter:
        aten._scaled_dot_product_flash_attention(meta(2, 8, 16, 32), meta(2, 2, 16, 32), meta(2, 2, 16, 32), 0.0, True)
    assert counter.get_total_flops() == op.cost.dense_flops
    _, (grad,) = calls["_scaled_dot_product_flash_attention_for_cpu_backward"]
    assert grad.kind == "attention_backward" and grad.extra_outputs == ((2, 2, 16, 32), (2, 2, 16, 32))
    assert grad.cost.flops == 2 * 2 * 8 * pairs * (3 * 32 + 2 * 32) == 1_310_720  # 2.5 × the forward
    assert grad.cost.dense_flops == 2 * 2 * 8 * 16 * 16 * (3 * 32 + 2 * 32) == 1_310_720
    with FlopCounterMode(display=False) as counter:
        aten._scaled_dot_product_flash_attention_backward(
            *(meta(2, 8, 16, 32), meta(2, 8, 16, 32), meta(2, 2, 16, 32), meta(2, 2, 16, 32), meta(2, 8, 16, 32)),
            *(meta(2, 8, 16), meta(0), meta(0), 16, 16, 0.0, True, meta(2), meta(0)),
        )
    assert counter.get_total_flops() == grad.cost.dense_flops


def test_sdpa_mask_is_read_and_keeps_every_pair():
    q, k, v, mask = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 10, 8), torch.randn(1, 2, 10, 8), torch.randn(6, 10)
    _, (op,) = only(
        lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), "_scaled_dot_product_flash_attention_for_cpu"
    )
    assert op.inputs[3] == (6, 10) and not op.attrs["causal"]
    assert op.cost.dense_flops == 2 * 1 * 2 * 6 * 10 * 16  # 3,840
    assert op.cost.flops == 1 * 2 * (6 * 10 * (32 + 6) - 2 * 6)  # + scale and softmax: 2·(60·38 − 12) = 4,536
    assert op.cost.read_bytes == 4 * (96 + 160 + 160 + 60)  # q, k, v and the mask


@pytest.mark.parametrize(
    "kernel, call, alignment",
    [
        (
            "_scaled_dot_product_flash_attention",
            lambda q, k, v: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True),
            "bottom_right",
        ),
        (
            "_scaled_dot_product_efficient_attention",
            lambda q, k, v: aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, True),
            "top_left",
        ),
        (
            "_scaled_dot_product_cudnn_attention",
            lambda q, k, v: aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, True),
            "top_left",
        ),
    ],
)
def test_cuda_sdpa_kernels_dense_flops_equal_flop_counter(kernel, call, alignment):
    q, k, v = meta(2, 8, 16, 64), meta(2, 8, 32, 64), meta(2, 8, 32, 64)
    found, (op,) = only(lambda: call(q, k, v), kernel)
    assert op.cost.dense_flops == 2 * 2 * 8 * 16 * 32 * 128 == flop_counter(found)  # 2·B·H·Sq·Sk·(D+Dv)
    assert op.attrs["causal_alignment"] == alignment
    # Sq = 16 < Sk = 32: top-left keeps Σ (i+1) = 136 pairs per head; FlashAttention-2's
    # bottom-right Σ (i+1+16) = 392
    pairs = {"top_left": 136, "bottom_right": 392}[alignment]
    # + 1 scale and 5 softmax per pair, − 2 per query row (all 16 rows see keys either way)
    assert op.cost.flops == 2 * 8 * (pairs * (2 * 128 + 6) - 2 * 16)  # 569,600 top-left, 1,642,752 bottom-right


def test_cuda_sdpa_backward_kernels_dense_flops_equal_flop_counter():
    grad, q, k, v, out = (meta(2, 4, 16, 8) for _ in range(5))
    bias = meta(2, 4, 16, 16)
    calls = {
        "_scaled_dot_product_flash_attention_backward": lambda: aten._scaled_dot_product_flash_attention_backward(
            grad, q, k, v, out, meta(2, 4, 16), meta(0), meta(0), 16, 16, 0.0, True, meta(2), meta(0)
        ),
        "_scaled_dot_product_efficient_attention_backward": lambda: (
            aten._scaled_dot_product_efficient_attention_backward(
                grad, q, k, v, bias, out, meta(2, 4, 32), meta(()), meta(()), 0.0, [True, True, True, False], True
            )
        ),
        "_scaled_dot_product_cudnn_attention_backward": lambda: aten._scaled_dot_product_cudnn_attention_backward(
            grad, q, k, v, out, meta(2, 4, 16, 1), meta(()), meta(()), bias, meta(0), meta(0), 16, 16, 0.0, True
        ),
    }
    for kernel, fn in calls.items():
        found, (op,) = only(fn, kernel)
        assert op.kind == "attention_backward"
        assert op.cost.dense_flops == 2 * 2 * 4 * 16 * 16 * (3 * 8 + 2 * 8) == flop_counter(found)  # 163,840
        assert op.cost.flops == 2 * 2 * 4 * 136 * 40  # causal: 136 of the 256 pairs per head


def test_bshd_kernels_agree_with_flop_counter_only_when_heads_equal_the_sequence():
    # _flash_attention_forward / _efficient_attention_forward take (B, S, H, D)
    def flash(q, k, v, length):
        return aten._flash_attention_forward(q, k, v, None, None, length, length, 0.0, False, False)

    def efficient(q, k, v, length):
        return aten._efficient_attention_forward(q, k, v, None, None, None, length, length, 0.0, 0, False)

    for kernel, fn in (("_flash_attention_forward", flash), ("_efficient_attention_forward", efficient)):
        square = [meta(2, 8, 8, 64) for _ in range(3)]  # S = H = 8
        found, (op,) = only(lambda fn=fn, square=square: fn(*square, 8), kernel)
        assert op.inputs[0] == (2, 8, 8, 64)
        assert op.cost.dense_flops == 2 * 2 * 8 * 8 * 8 * 128 == flop_counter(found)
        longer = [meta(2, 16, 8, 64) for _ in range(3)]  # S = 16, H = 8
        found, (op,) = only(lambda fn=fn, longer=longer: fn(*longer, 16), kernel)
        assert op.inputs[0] == (2, 8, 16, 64)  # (B, H, S, D)
        assert op.cost.dense_flops == 2 * 2 * 8 * 16 * 16 * 128 == 1_048_576
        # FlopCounterMode reads (B, S, H, D) as (B, H, S, D): 2·B·S·H·H·(D+Dv), H/S of the work
        assert flop_counter(found) == op.cost.dense_flops * 8 // 16


def test_efficient_attention_custom_mask_type_sets_the_alignment():
    q, k, v = meta(1, 4, 2, 8), meta(1, 6, 2, 8), meta(1, 6, 2, 8)
    _, (op,) = only(
        lambda: aten._efficient_attention_forward(q, k, v, None, None, None, 4, 6, 0.0, 2, False),
        "_efficient_attention_forward",
    )
    assert op.attrs["causal_alignment"] == "bottom_right"
    assert op.cost.dense_flops == 2 * 2 * 4 * 6 * 16  # every pair, matmuls only
    # query i sees i+1+(6-4) keys: 18 pairs per head, each 2·(8+8) matmul + 1 scale + 5 softmax, − 2 per
    # query row (all 4 see keys): 2 heads · (18·38 − 8) = 1,352
    assert op.cost.flops == 2 * ((3 + 4 + 5 + 6) * 38 - 2 * 4)


def test_variable_length_flash_attention_is_one_record_per_pair_of_lengths():
    offsets = torch.tensor([0, 3, 8, 11, 16], dtype=torch.int32)  # lengths 3, 5, 3, 5
    q, k, v = meta(16, 4, 16), meta(16, 2, 16), meta(16, 2, 16)
    out = aten._flash_attention_forward(q, k, v, offsets.to("meta"), offsets.to("meta"), 5, 5, 0.0, False, False)
    call = AtenCall(
        aten._flash_attention_forward.default, (q, k, v, offsets, offsets, 5, 5, 0.0, False, False), {}, out
    )
    records = lower(call)
    assert [(op.inputs[0], op.count) for op in records] == [((1, 4, 3, 16), 2), ((1, 4, 5, 16), 2)]
    assert sum(op.cost.dense_flops * op.count for op in records) == 2 * 4 * (2 * 9 + 2 * 25) * 32  # 2·H·Σ S²·(D+Dv)
    # + 1 scale and 5 softmax per pair, − 2 per query row: 4·(2·(9·70 − 6) + 2·(25·70 − 10)) = 18,912
    assert flops(records) == 4 * (2 * (9 * 70 - 2 * 3) + 2 * (25 * 70 - 2 * 5))


def test_multihead_attention_fast_path():
    mha = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        call, records = only(lambda: mha(x, x, x), "_native_multi_head_attention")
    ops = by_name(records)
    b, t, d, h = 2, 10, 32, 4
    assert ops["_native_multi_head_attention.qkv_proj"].cost.flops == 2 * b * t * d * 3 * d  # one (D, 3D) product
    assert ops["_native_multi_head_attention.scores"].cost.flops == 2 * b * h * t * t * (d // h)
    assert ops["_native_multi_head_attention.context"].cost.flops == 2 * b * h * t * t * (d // h)
    assert ops["_native_multi_head_attention.out_proj"].cost.flops == 2 * b * t * d * d
    assert flops(records, "matmul") == 189_440  # 122,880 + 12,800 + 12,800 + 40,960
    assert ops["_native_multi_head_attention.softmax"].output == (b, h, t, t)
    assert ops["_native_multi_head_attention.average_weights"].output == (b, t, t)
    assert flop_counter(call) == 0  # FlopCounterMode has no formula for the fused kernel


def test_multihead_attention_training_path_matches_flop_counter_per_call():
    mha = nn.MultiheadAttention(32, 4, batch_first=True)
    x = torch.randn(2, 10, 32, requires_grad=True)
    total = 0
    for call, records in recorded(lambda: mha(x, x, x)):
        if call.name in ("mm", "addmm", "bmm", "baddbmm"):
            ours = flops(records, "matmul")
            assert ours == flop_counter(call), call.func
            total += ours
    assert total == 189_440  # the same products as the fused kernel: 122,880 + 2 · 12,800 + 40,960


def test_transformer_encoder_layer_fast_path():
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    with torch.no_grad():
        _, records = only(lambda: layer(torch.randn(2, 10, 32)), "_transformer_encoder_layer_fwd")
    # attention's products 189,440 + feed-forward 2 · 2·20·32·64 = 163,840
    assert flops(records, "matmul") == 189_440 + 163_840
    assert [op.name for op in records if op.kind == "layernorm"] == [
        "_transformer_encoder_layer_fwd.norm1",
        "_transformer_encoder_layer_fwd.norm2",
    ]


# --- recurrent layers -------------------------------------------------------------------


def test_two_layer_lstm_closed_form():
    lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
    with torch.no_grad():
        layers = lowered(lambda: lstm(torch.randn(3, 5, 8)), "mkldnn_rnn_layer")
    t, b, h = 5, 3, 16
    for (call, records), i in zip(layers, (8, 16), strict=True):
        # per step and row: x·W_ihᵀ and h·W_hhᵀ, 2·(I + H)·4H
        assert flops(records, "matmul") == 2 * t * b * (i + h) * 4 * h
        assert by_name(records)["mkldnn_rnn_layer.hidden_matmul"].count == t
        # gates: x-part + h-part + b_ih + b_hh = 3 adds per gate element (12H); cell from the
        # catalog, 3 sigmoid (4 each) + 2 tanh (1 each) + 3 mul + 1 add = 18 per unit: 30H
        # (was 21H = 16H + 5H, when sigmoid and tanh were each counted as 1 FLOP)
        assert flops(records, "elementwise") == 30 * t * b * h  # 7,200
        assert sum(op.cost.transcendentals * op.count for op in records) == 5 * t * b * h
        assert flop_counter(call) == 0  # FlopCounterMode has no formula for the fused kernel
    assert sum(flops(r, "matmul") for _, r in layers) == 46_080 + 61_440


def test_lstm_backward_is_twice_the_forward_products():
    lstm = nn.LSTM(8, 16)
    x = torch.randn(5, 3, 8, requires_grad=True)
    _, records = only(lambda: lstm(x)[0].sum().backward(), "mkldnn_rnn_layer_backward")
    n, i, h = 15, 8, 16
    ops = by_name(records)
    # input and recurrent gradients + both weight gradients: 2 · 2·N·4H·(I + H)
    assert flops(records, "matmul") == 2 * 2 * n * 4 * h * (i + h) == 92_160
    assert flops(records, "rnn_gate_backward") == 24 * n * h  # the gate backward, 24 per unit
    assert ops["mkldnn_rnn_layer_backward.bias_grad"].cost.flops == (n - 1) * 4 * h


def test_gru_decomposes_and_each_product_matches_flop_counter():
    gru = nn.GRU(8, 16)
    total = 0
    with torch.no_grad():
        for call, records in lowered(lambda: gru(torch.randn(5, 3, 8)), "addmm"):
            assert flops(records, "matmul") == flop_counter(call)
            total += flops(records, "matmul")
    assert total == 2 * 5 * 3 * (8 + 16) * 3 * 16 == 34_560  # 2·T·B·(I + H)·3H


def test_cudnn_rnn_from_its_schema():
    weights = [meta(48, 8), meta(48, 16), meta(48), meta(48), meta(48, 16), meta(48, 16), meta(48), meta(48)]
    h0 = meta(2, 3, 16)
    call, records = only(
        lambda: aten._cudnn_rnn(
            meta(5, 3, 8), weights, 4, None, h0, None, 3, 16, 0, 2, False, 0.0, False, False, [], None
        ),
        "_cudnn_rnn",
    )
    assert flops(records, "matmul") == 2 * 15 * (8 + 16) * 48 + 2 * 15 * (16 + 16) * 48  # a 2-layer GRU
    # per row and step with biases: r, z = sigmoid(3 adds) 7 per gate element (14H) + candidate
    # n = tanh(x_n + b_in + r·(h_n + b_hn)), h' = n + z·(h - n) 8 per unit = 22H (was 16H, sigmoid as 1)
    assert flops(records, "elementwise") == 2 * 22 * 15 * 16  # 2 layers · 22 · 15 rows · 16 units = 10,560
    assert flop_counter(call) == 0


def test_packed_lstm_with_projection_runs_each_step_at_its_batch():
    weights = [meta(64, 8), meta(64, 4), meta(64), meta(64), meta(4, 16)]
    _, records = only(
        lambda: aten._cudnn_rnn(
            meta(9, 8),
            weights,
            5,
            None,
            meta(1, 3, 4),
            meta(1, 3, 16),
            2,
            16,
            4,
            1,
            False,
            0.0,
            False,
            False,
            [3, 3, 2, 1],
            None,
        ),
        "_cudnn_rnn",
    )
    hidden = [(op.inputs[0], op.count) for op in records if op.name.endswith("hidden_matmul")]
    assert hidden == [((3, 4), 2), ((2, 4), 1), ((1, 4), 1)]
    # 9 rows: 2·9·8·64 input + 2·9·4·64 recurrent (from the projected h) + 2·9·16·4 projection
    assert flops(records, "matmul") == 9_216 + 4_608 + 1_152


def test_fused_lstm_cell():
    _, records = only(
        lambda: aten._thnn_fused_lstm_cell(meta(3, 64), meta(3, 64), meta(3, 16), meta(64), meta(64)),
        "_thnn_fused_lstm_cell",
    )
    # the gates (3 adds per gate element, 12H) and cell (18 per unit) of one step: 30H per row
    # (was 21H, sigmoid as 1 FLOP)
    assert flops(records) == 30 * 3 * 16  # 1,440


# --- embedding and indexing -------------------------------------------------------------


def test_embedding_reads_only_the_rows_it_looks_up():
    table = nn.Embedding(1_000, 64)
    ids = torch.randint(0, 1_000, (4, 8))
    _, (op,) = only(lambda: table(ids), "embedding")
    assert op.kind == "embedding" and op.output == (4, 8, 64)
    assert op.cost.read_bytes == 32 * 64 * 4 + 32 * 8  # 32 rows of float32 + 32 int64 indices = 8,448
    assert op.cost.write_bytes == 8_192


def test_embedding_backward_zeroes_the_table_then_scatter_adds():
    table = nn.Embedding(100, 4)
    ids = torch.tensor([[1, 2], [3, 1]])
    _, records = only(lambda: table(ids).sum().backward(), "embedding_dense_backward")
    zero, scatter = records
    assert zero.cost.write_bytes == 100 * 4 * 4  # the whole gradient table written once
    assert scatter.attrs["mode"] == "add" and scatter.cost.flops == 16  # 4 rows of 4 added
    assert scatter.cost.read_bytes == 4 * 8 + 16 * 4 + 16 * 4  # indices, the grad rows, the old touched values
    assert scatter.cost.write_bytes == 64


def test_advanced_indexing_and_its_backward():
    x = torch.randn(10, 4, requires_grad=True)
    idx = torch.tensor([1, 3, 3])
    calls = {call.name: records for call, records in recorded(lambda: x[idx].sum().backward())}
    (gather,) = calls["index"]
    assert gather.kind == "gather" and gather.cost.read_bytes == 12 * 4 + 3 * 8  # 12 touched + 3 indices
    copy, scatter = calls["index_put"]
    assert copy.kind == "copy" and copy.cost.write_bytes == 160  # out of place: the zeros copied first
    assert scatter.attrs["mode"] == "add" and scatter.cost.flops == 12
    assert scatter.cost.write_bytes == 48  # only the touched elements


def test_boolean_mask_assignment_writes_the_selected_elements():
    x = torch.arange(12.0).reshape(3, 4)
    mask = x > 6  # 5 elements set
    _, (op,) = only(lambda: x.__setitem__(mask, 0.0), "index_put_")
    assert op.inputs == ((3, 4), (3, 4), ()) and op.attrs["touched"] == 5
    assert op.cost.read_bytes == 12 + 4  # the boolean mask and one scalar
    assert op.cost.write_bytes == 5 * 4


def test_index_add_in_place_with_alpha():
    x = torch.zeros(10, 4)
    _, records = only(lambda: x.index_add_(0, torch.tensor([1, 1, 2]), torch.ones(3, 4), alpha=2), "index_add_")
    alpha, scatter = records
    assert alpha.cost.flops == 12  # source scaled by alpha: 3 * 4
    assert scatter.kind == "scatter" and scatter.attrs["mode"] == "add"
    assert scatter.cost.flops == 12 and scatter.cost.write_bytes == 48  # in place: no copy of x


def test_scatter_family():
    x = torch.randn(10, 4)
    index = torch.tensor([[0, 1, 0, 1]])
    _, (copy, scatter) = only(lambda: x.scatter(1, torch.tensor([[0], [1]]), 1.5), "scatter")
    assert copy.cost.write_bytes == 160 and scatter.attrs["touched"] == 2  # one scalar written twice
    _, records = only(lambda: x.scatter_add(0, index, torch.ones(2, 4)), "scatter_add")
    assert records[1].cost.flops == 4  # src read only where the (1, 4) index reaches
    _, records = only(lambda: x.scatter_reduce(0, index, torch.ones(1, 4), "mean"), "scatter_reduce")
    assert [op.name for op in records] == [
        "scatter_reduce.copy",
        "scatter_reduce",
        "scatter_reduce.count",
        "scatter_reduce.mean",
    ]
    _, (gathered,) = only(lambda: torch.gather(x, 1, torch.tensor([[0], [1]])), "gather")
    assert gathered.output == (2, 1) and gathered.cost.read_bytes == 2 * 4 + 2 * 8


# --- copies, selects, sorts, scans ------------------------------------------------------


def test_copies():
    x = torch.randn(10, 4)
    _, (cat,) = only(lambda: torch.cat([x, x]), "cat")
    assert (cat.kind, cat.cost.read_bytes, cat.cost.write_bytes) == ("copy", 320, 320)
    _, (cast,) = only(lambda: x.to(torch.float64), "_to_copy")
    assert (cast.cost.read_bytes, cast.cost.write_bytes) == (160, 320)  # 40 float32 in, 40 float64 out
    _, (crop,) = only(lambda: F.pad(torch.randn(1, 2, 5, 5), (1, -1, 2, 0)), "constant_pad_nd")
    assert crop.inputs == ((1, 2, 5, 4),)  # the cropped column is never read
    assert crop.cost.write_bytes == 2 * 7 * 5 * 4
    _, (reflect,) = only(lambda: F.pad(torch.randn(1, 2, 5, 5), (1, 1, 2, 2), mode="reflect"), "reflection_pad2d")
    assert (reflect.cost.read_bytes, reflect.cost.write_bytes) == (200, 504)
    for name, fn in (("repeat", lambda: x.repeat(2, 1)), ("flip", lambda: x.flip(0)), ("tril", lambda: x.tril())):
        _, (op,) = only(fn, name)
        assert op.kind == "copy" and op.cost.flops == 0
    _, (into,) = only(lambda: torch.empty(3, 4).copy_(torch.randn(4)), "copy_")
    assert (into.cost.read_bytes, into.cost.write_bytes) == (16, 48)  # a broadcast source is read once


def test_where_and_masked_fill_are_selects():
    x = torch.randn(10, 4)
    _, (where,) = only(lambda: torch.where(x > 0, x, torch.zeros(4)), "where")
    assert where.kind == "elementwise" and where.cost.flops == 40 and where.compute_dtype == "float32"
    assert where.cost.read_bytes == 40 + 160 + 16  # the boolean condition, x, the broadcast other
    _, (fill,) = only(lambda: x.masked_fill(x > 0, 0.0), "masked_fill")
    assert fill.cost.flops == 40


def test_sorts_and_selections():
    x = torch.randn(10, 8)
    _, (op,) = only(lambda: x.sort(dim=1), "sort")
    assert op.cost.flops == 10 * 24  # ⌈8·log2 8⌉ = 24 comparisons per row
    assert op.cost.write_bytes == 320 + 640  # values and int64 indices
    _, (top,) = only(lambda: x.topk(2), "topk")
    assert top.output == (10, 2) and top.cost.flops == 10 * 8  # ⌈8·log2 2⌉ per row
    _, (arg,) = only(lambda: x.argmax(1), "argmax")
    assert arg.kind == "reduce" and arg.cost.flops == 10 * 7  # 7 comparisons per row of 8
    _, (everything,) = only(lambda: x.argmin(), "argmin")
    assert everything.output == () and everything.cost.flops == 79  # over all 80 elements


def test_isin_compares_pairs_or_sorts_as_atens_cpu_kernel_does():
    """``generate``'s stopping test: each row's last token against the end-of-sequence ids."""
    ids, eos = torch.randint(0, 100, (4, 32)), torch.tensor([1])
    _, (last,) = only(lambda: torch.isin(ids[:, -1], eos), "isin")
    # n = 4, m = 1 < 10·4^0.145 ≈ 12.2: pairs, 4·(2·1 − 1) = 4; reads 4 + 1 int64, writes 4 bools
    assert (last.kind, last.inputs, last.output, last.cost.flops) == ("membership", ((4,), (1,)), (4,), 4)
    assert dict(last.cost.flops_by_dtype) == {"int64": 4}  # compares of the elements' dtype, not bool
    assert (last.cost.read_bytes, last.cost.write_bytes) == (40, 4)
    _, (scalar,) = only(lambda: torch.isin(ids, 7), "isin")
    assert scalar.inputs == ((4, 32),) and scalar.cost.flops == 128  # m = 1: one compare each
    _, (many,) = only(lambda: torch.isin(ids, torch.arange(50)), "isin")
    # n = 128, m = 50 ≥ 10·128^0.145 ≈ 20.2: sorted. ⌈128·log2 128⌉ = 896, ⌈50·log2 50⌉ = 283,
    # ⌈178·log2 178⌉ = 1,331, then 177 neighbours: 2,687
    assert many.cost.flops == 896 + 283 + 1331 + 177


def test_scans():
    x = torch.randn(10, 4)
    _, (op,) = only(lambda: x.cumsum(0), "cumsum")
    assert op.kind == "cumulative" and op.cost.flops == 4 * 9  # 9 steps in each of 4 columns
    _, (log,) = only(lambda: x.logcumsumexp(1), "logcumsumexp")
    assert log.cost.flops == 10 * 3 * 7 and log.cost.transcendentals == 10 * 3 * 2


def test_embedding_bag_reads_the_rows_of_its_bags():
    bag = nn.EmbeddingBag(1_000, 8, mode="mean")
    ids = torch.randint(0, 1_000, (4, 6))  # 4 bags of 6 rows
    _, (op,) = only(lambda: bag(ids).sum().backward(), "_embedding_bag")
    assert op.kind == "embedding_bag" and op.output == (4, 8)
    assert op.cost.flops == (24 - 4) * 8 + 4 * 8  # 5 adds per bag and feature, then the mean's divide
    assert op.inputs[0] == (24, 8)  # the 24 rows looked up, never the (1,000, 8) table
    _, records = only(lambda: bag(ids).sum().backward(), "_embedding_bag_backward")
    assert [op.name for op in records] == [
        "_embedding_bag_backward.zero",
        "_embedding_bag_backward.scale",
        "_embedding_bag_backward",
    ]
    assert records[2].cost.flops == 24 * 8  # every looked-up row receives its bag's gradient


# --- entries for ops that reach dispatch whole only off this CPU (calls built by hand) -----


def test_math_attention_when_it_reaches_dispatch_whole_is_the_chain_it_runs():
    q, k, v = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 10, 8), torch.randn(1, 2, 10, 4)
    out = (torch.empty(1, 2, 6, 4), torch.empty(1, 2, 6, 10))
    call = AtenCall(aten._scaled_dot_product_attention_math.default, (q, k, v), {"is_causal": True}, out)
    records = by_name(lower(call))
    name = "_scaled_dot_product_attention_math"
    assert records[f"{name}.scores"].cost.flops == 2 * 2 * 6 * 10 * 8  # every pair, masked ones too
    assert records[f"{name}.mask"].inputs == ((1, 2, 6, 10), (6, 10))  # the causal mask added
    assert records[f"{name}.softmax"].output == (1, 2, 6, 10)
    assert records[name].cost.flops == 2 * 2 * 6 * 10 * 4


def test_cells_and_stacks_that_reach_dispatch_whole():
    x, h, c = torch.randn(3, 8), torch.randn(3, 16), torch.randn(3, 16)
    w_ih, w_hh, b = torch.randn(64, 8), torch.randn(64, 16), torch.randn(64)
    cell = AtenCall(
        aten.lstm_cell.default, (x, [h, c], w_ih, w_hh, b, b), {}, torch.lstm_cell(x, (h, c), w_ih, w_hh, b, b)
    )
    records = lower(cell)
    assert flops(records, "matmul") == 2 * 3 * (8 + 16) * 64  # one step
    assert flops(records, "elementwise") == 30 * 3 * 16  # 30H per row with biases, as above (was 21H)
    seq = torch.randn(5, 3, 8)
    args = (seq, [h[None], c[None]], [w_ih, w_hh, b, b], True, 1, 0.0, False, False, False)
    stack = AtenCall(aten.lstm.input, args, {}, aten.lstm.input(*args))
    assert flops(lower(stack), "matmul") == 2 * 5 * 3 * (8 + 16) * 64
    gates, hx = meta(3, 48), meta(3, 16)
    gru = AtenCall(aten._thnn_fused_gru_cell.default, (gates, gates, hx, None, None), {}, (meta(3, 16), meta(3, 80)))
    # without biases: r, z = sigmoid(add) 5 per gate element (10H) + candidate 6 per unit = 16H
    # per row (was 10H, sigmoid as 1 FLOP)
    assert flops(lower(gru)) == 16 * 3 * 16  # 768


def test_cudnn_rnn_backward_from_its_schema():
    weights = [meta(64, 8), meta(64, 16), meta(64), meta(64)]
    args = (meta(5, 3, 8), weights, 4, meta(1), meta(1, 3, 16), meta(1, 3, 16), meta(5, 3, 16), meta(5, 3, 16))
    args += (None, None, 2, 16, 0, 1, False, 0.0, True, False, [], None, meta(8), [True, True, True, True])
    out = (meta(5, 3, 8), meta(1, 3, 16), meta(1, 3, 16), [meta(64, 8), meta(64, 16), meta(64), meta(64)])
    records = lower(AtenCall(aten._cudnn_rnn_backward.default, args, {}, out))
    n, i, h = 15, 8, 16
    assert flops(records, "matmul") == 2 * 2 * n * 4 * h * (i + h)  # data and weight gradients
    without_weights = (*args[:-1], [True, True, True, False])
    records = lower(AtenCall(aten._cudnn_rnn_backward.default, without_weights, {}, out))
    assert flops(records, "matmul") == 2 * n * 4 * h * (i + h)  # the data gradients only


def test_to_is_free_when_nothing_changes():
    x = torch.randn(3)
    assert lower(AtenCall(aten.to.dtype, (x, torch.float32), {}, x)) == []
    assert "returned as is" in EMPTY_REASONS["to"]
    (op,) = lower(AtenCall(aten.to.dtype, (x, torch.float64), {}, x.double()))
    assert op.kind == "copy" and op.cost.write_bytes == 24


def test_index_copy_fill_put_and_masked_scatter_write_what_they_touch():
    x = torch.zeros(6, 5)
    _, (copy, scatter) = only(lambda: x.index_copy(0, torch.tensor([3]), torch.ones(1, 5)), "index_copy")
    assert copy.cost.write_bytes == 120 and scatter.cost.write_bytes == 20  # one row of 5
    _, (_, fill) = only(lambda: x.index_fill(1, torch.tensor([0, 2]), 2.0), "index_fill")
    assert fill.attrs["touched"] == 12 and fill.cost.write_bytes == 48  # 2 columns of 6
    _, (put,) = only(lambda: x.put_(torch.tensor([0, 7]), torch.ones(2), accumulate=True), "put_")
    assert put.attrs["mode"] == "add" and put.cost.flops == 2
    y = torch.arange(30.0).reshape(6, 5)
    _, (_, masked) = only(lambda: y.masked_scatter(y > 24, torch.zeros(30)), "masked_scatter")
    assert masked.inputs[2] == (5,) and masked.cost.write_bytes == 20  # 25..29: 5 set


def test_paged_flash_attention_reads_max_k_keys_per_sequence():
    q, cache = meta(2, 4, 8, 16), meta(10, 16, 2, 16)  # q (B, S, H, D); k, v in 10 blocks of 16
    args = (q, cache, cache, None, None, 4, 40, 0.0, False, False)
    call = AtenCall(aten._flash_attention_forward.default, args, {"block_table": meta(2, 3)}, (meta(2, 4, 8, 16),))
    (op,) = lower(call)
    assert op.inputs[1] == (2, 2, 40, 16)  # (B, Hkv, max_k, D), not the block pool
    assert op.cost.dense_flops == 2 * 2 * 8 * 4 * 40 * 32
    assert op.cost.flops == 2 * 8 * (4 * 40 * (64 + 6) - 2 * 4)  # + scale and softmax: 16·(160·70 − 8) = 179,072


def test_variable_length_efficient_attention_counts_each_sequence_alone():
    # nested-tensor sdpa calls the memory-efficient kernel with q, k, v (1, total, H, D) and
    # cumulative offsets: sequences of 32, 64, 96 and 128 tokens, H = 8, D = Dv = 64
    offsets = torch.tensor([0, 32, 96, 192, 320], dtype=torch.int32)
    q, k, v = (meta(1, 320, 8, 64) for _ in range(3))
    args = (q, k, v, None, offsets, offsets, 128, 128, 0.0, 0, True)
    out = (meta(1, 320, 8, 64), meta(1, 8, 320), meta(()), meta(()), 128, 128)
    records = lower(AtenCall(aten._efficient_attention_forward.default, args, {}, out))
    assert [(op.inputs[0], op.count) for op in records] == [((1, 8, s, 64), 1) for s in (32, 64, 96, 128)]
    # 2·H·Σ S²·(D+Dv) = 2·8·(32²+64²+96²+128²)·128 = 62,914,560 (one dense 320-token sequence
    # would be 2·8·320²·128 = 209,715,200)
    dense = sum(op.cost.dense_flops * op.count for op in records)
    assert dense == 2 * 8 * (32**2 + 64**2 + 96**2 + 128**2) * 128 == 62_914_560
    # + 1 scale and 5 softmax per pair, − 2 per query row: 8·(30,720·262 − 2·320) = 64,384,000
    assert flops(records) == 8 * ((32**2 + 64**2 + 96**2 + 128**2) * 262 - 2 * 320) == 64_384_000
    backward_args = (meta(1, 320, 8, 64), q, k, v, None, meta(1, 320, 8, 64), offsets, offsets, 128, 128)
    backward_args += (meta(1, 8, 320), 0.0, meta(()), meta(()), 0, False)
    grads = (meta(1, 320, 8, 64), meta(1, 320, 8, 64), meta(1, 320, 8, 64), meta(0))
    records = lower(AtenCall(aten._efficient_attention_backward.default, backward_args, {}, grads))
    assert [op.kind for op in records] == ["attention_backward"] * 4
    # FlopCounterMode's backward per sequence: 2·H·S²·(3D + 2Dv) = 2·8·30,720·320 = 157,286,400
    assert flops(records) == 2 * 8 * (32**2 + 64**2 + 96**2 + 128**2) * 320 == 157_286_400
    # FlopCounterMode's own per-sequence unpacking gives the same, forward and backward
    from torch.utils import flop_counter

    assert flop_counter._efficient_attention_forward_flop(q, k, v, None, offsets, offsets, 128, 128) == 62_914_560
    assert (
        flop_counter._efficient_attention_backward_flop(
            meta(1, 320, 8, 64), q, k, v, None, None, offsets, offsets, 128, 128
        )
        == 157_286_400
    )


@pytest.mark.parametrize(
    "case",
    [
        dict(is_causal=True),
        dict(attn_mask="float"),
        dict(attn_mask="bool"),
        dict(is_causal=True, enable_gqa=True, dropout_p=0.5),
    ],
    ids=["causal", "float-mask", "bool-mask", "causal-gqa-dropout"],
)
def test_math_attention_counts_the_same_under_inference_mode_and_no_grad(case):
    # Under no_grad the math kernel decomposes into its parts; under inference_mode it reaches
    # the recorder whole and its entry builds the same chain: identical FLOPs and bytes.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from neural_cost.adapters.torch import TorchAdapter

    q, k = torch.randn(2, 8, 16, 4), torch.randn(2, 8 if not case.get("enable_gqa") else 2, 12, 4)
    v = k.clone()  # made outside inference_mode, as a user's inputs are
    masks = {"float": torch.randn(2, 1, 16, 12), "bool": torch.rand(16, 12) > 0.3}
    kwargs = {**case, "attn_mask": masks.get(case.get("attn_mask"))}

    def program(q, k, v):
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, **kwargs)

    totals = []
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            trace = TorchAdapter().trace(program, (q, k, v))
        ops = trace.operations
        fields = ("flops", "read_bytes", "write_bytes")
        totals.append(tuple(sum(getattr(op.cost, f) * op.count for op in ops) for f in fields))
        if mode is torch.inference_mode:
            assert any(op.name.startswith("_scaled_dot_product_attention_math") for op in ops)  # reached whole
    assert totals[0][0] == totals[1][0]
    # bytes too, but for a boolean mask: sdpa turns it into 0/-inf before the math kernel, and
    # under inference_mode PyTorch itself fills one 4-byte scalar where no_grad fills two
    extra = 4 if case.get("attn_mask") == "bool" else 0
    assert totals[0][1:] == (totals[1][1] + extra, totals[1][2] + extra)
    if case == {"is_causal": True}:
        # q scaled 2·8·16·4 = 1,024; the causal mask's where 16·12 = 192; kᵀ scaled 2·8·4·12 = 768;
        # two products 2·(2·2·8·16·12·4) = 49,152; mask added 2·8·16·12 = 3,072; safe softmax over
        # 256 rows of 12: softmax 11+12+12+11+12 = 58 and the all-masked test 12+11+12 = 35, 93·256
        assert totals[0][0] == 1_024 + 192 + 768 + 49_152 + 3_072 + 93 * 256 == 78_016


def test_weight_norm_forward_and_backward_are_elementwise_over_the_weight():
    """``weight_norm`` (wav2vec2's positional convolution) runs ``_weight_norm_interface``: w = v · g / ‖v‖.
    A Conv1d 8 → 16, kernel 5: v is (16, 8, 5), 640 elements; normed over every dim but 2, g is (1, 1, 5).
    Forward 3 per element (square, add into the norm, the scale's multiply): 1,920 FLOPs; backward 5 per
    element (a = Σ grad_w · v: 2; grad_v = g/‖v‖ · (grad_w − v · a/‖v‖²): 3): 3,200. Nothing unmodeled;
    FlopCounterMode counts neither (no formula for them)."""
    from neural_cost import estimate_trace
    from neural_cost.adapters import adapter_for

    conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(8, 16, 5, padding=2), name="weight", dim=2)
    estimate = estimate_trace(adapter_for("torch").trace(conv, (torch.randn(2, 8, 20),), training=True))
    found = {c.operation.name: c for c in estimate.by_operation if "weight_norm" in c.operation.name}
    assert not estimate.coverage.unmodeled
    forward, backward = found["_weight_norm_interface"], found["_weight_norm_interface_backward"]
    assert (forward.operation.inputs, forward.operation.output) == (((16, 8, 5), (1, 1, 5)), (16, 8, 5))
    assert (forward.flops, backward.flops) == (1_920, 3_200)


def test_histc_counts_each_value_into_its_bin_and_finds_the_range_first_when_asked():
    """``histc``, what Mixtral's experts count their tokens with: 6 FLOPs a value (2 range compares, the bin's
    subtract, multiply and divide, 1 add), and with min = max (the default) the data's own range first."""
    x = torch.randn(10, 3)
    _, (own,) = only(lambda: torch.histc(x, bins=4), "histc")
    assert own.kind == "histogram" and own.output == (4,) and own.attrs["range_from_data"]
    assert own.cost.flops == 238  # 6 · 30 + 2 · 29 (min and max) = 238
    assert own.cost.read_bytes == 240 and own.cost.write_bytes == 16  # x read twice: 2 · 4 · 30; 4 · 4 bins
    _, (given,) = only(lambda: torch.histc(x, bins=5, min=-1, max=1), "histc")
    assert given.cost.flops == 180 and given.cost.read_bytes == 120  # 6 · 30; x read once
