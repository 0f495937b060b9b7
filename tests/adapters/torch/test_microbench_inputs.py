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
