"""How the PyTorch grid feeds a norm backward: cold copies of its large inputs (``_cold_inputs``)."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from neural_cost.adapters._torch.microbench import _COLD_FROM, _HELD, _RING_BYTES, _cold_inputs


def _program(shape: tuple[int, ...]):
    """A wrapped program recording the storage of its first two arguments at each call."""
    seen: list[tuple[int, int]] = []
    extra = torch.ones(3)

    def fn(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        seen.append((a.data_ptr(), b.data_ptr()))
        assert c is extra  # the arguments after the leading ones are the caller's own
        return a

    args = (torch.ones(shape), torch.ones(shape), extra)
    return _cold_inputs(fn, 2), args, seen


def test_large_inputs_rotate_through_copies_spanning_the_ring():
    """Two 4 MiB inputs (1,048,576 float32 each) are 8 MiB a set: ⌈64 MiB ÷ 8 MiB⌉ = 8 copies,
    used in turn, none of them the caller's buffers; one program's copies are held at a time."""
    assert _RING_BYTES == 64 * 1024 * 1024
    run, args, seen = _program((1024, 1024))
    for _ in range(16):
        run(*args)
    assert len(set(seen)) == 8 and seen[:8] == seen[8:]  # in turn
    assert not {p for pair in seen for p in pair} & {args[0].data_ptr(), args[1].data_ptr()}
    assert _HELD.owner is run and len(_HELD.copies) == 8
    other, other_args, _ = _program((2048, 1024))  # 16 MiB a set: 4 copies
    other(*other_args)
    assert _HELD.owner is other and len(_HELD.copies) == 4  # the first program's are let go


def test_small_inputs_and_a_traced_call_use_the_callers_arguments():
    """Two 64 KiB inputs are under ``_COLD_FROM`` (512 KiB): the caller's buffers. Under a dispatch
    mode (the tracer's), large ones too: the traced operations are the timed ones, on the same shapes."""
    assert _COLD_FROM > 2 * 64 * 1024
    run, args, seen = _program((128, 128))
    for _ in range(3):
        run(*args)
    assert set(seen) == {(args[0].data_ptr(), args[1].data_ptr())}

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    run, args, seen = _program((1024, 1024))
    with Watch():
        run(*args)
    assert seen == [(args[0].data_ptr(), args[1].data_ptr())]


def test_a_depthwise_program_reads_a_cold_input_and_writes_a_cold_result(monkeypatch):
    """A depthwise forward of the grid (``_convs``): the first of ``_LARGE_DEPTHWISE``, 4×96×112² float32,
    is 4,816,896 elements = 19,267,584 bytes, so ⌈64 MiB ÷ 19,267,584⌉ = 4 input copies in turn, none the
    caller's; its result (stride 1, same size) is kept in the ring, so calls whose results are dropped at
    once still write different buffers. Traced, one call on the caller's input, its ring not filled: one
    convolution recorded."""
    import torch.nn.functional as F

    from neural_cost.adapters._torch.microbench import _LARGE_DEPTHWISE, _RING, _convs

    assert _LARGE_DEPTHWISE[0] == (4, 96, 112, 3, 1)
    program = next(p for p in _convs(False) if p.name == "conv2d depthwise 4x96x112x112 k3 s1")
    x, w = program.args
    calls: list[int] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten.convolution.default:
                calls.append(args[0].data_ptr())
            return func(*args, **(kwargs or {}))

    kept = len(_RING.kept)
    with Watch():
        program.fn(x, w)
    assert calls == [x.data_ptr()] and len(_RING.kept) == kept
    conv2d, read = F.conv2d, []

    def reading(t, *args, **kwargs):
        read.append(t.data_ptr())
        return conv2d(t, *args, **kwargs)

    monkeypatch.setattr(F, "conv2d", reading)
    written = [program.fn(x, w).data_ptr() for _ in range(9)]  # each result dropped before the next call
    # the ring keeps results spanning 64 MiB, ⌈64 MiB ÷ 19,267,584⌉ = 4 at least, alive while the next is
    # written: no buffer comes back within 5 calls
    assert all(len(set(written[i : i + 5])) == 5 for i in range(5)) and _RING.kept[-1][0].data_ptr() == written[-1]
    assert _HELD.owner is program.fn and len(_HELD.copies) == 4
    copies = [copy[0].data_ptr() for copy in _HELD.copies]
    timed = read[-9:]  # the first call also filled the ring with its own results (untimed in a calibration)
    assert x.data_ptr() not in copies and set(timed) == set(copies) and timed[:4] == timed[4:8]  # in turn
