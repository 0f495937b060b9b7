"""How the PyTorch grid feeds a norm backward: cold copies of its large inputs (``_cold_inputs``)."""

import torch

from neural_cost.adapters._torch.microbench import _COLD_FROM, _RING_BYTES, _cold_inputs


def _seen(shape: tuple[int, ...], calls: int) -> tuple[list[int], list[int]]:
    """The storage addresses of the first two arguments ``fn`` was given at each call."""
    firsts, seconds = [], []
    extra = torch.ones(3)

    def fn(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        firsts.append(a.data_ptr())
        seconds.append(b.data_ptr())
        assert c is extra  # the arguments after the leading ones are the caller's own
        return a

    args = (torch.ones(shape), torch.ones(shape), extra)
    run = _cold_inputs(fn, args, 2)
    for _ in range(calls):
        run(*args)
    return firsts, seconds


def test_large_inputs_rotate_through_copies_spanning_the_ring():
    """Two 8 MiB inputs (2 × 2,097,152 float32) are 16 MiB a set: ⌈64 MiB ÷ 16 MiB⌉ = 4 copies,
    used in turn, none of them the caller's buffers."""
    assert _RING_BYTES == 64 * 1024 * 1024
    firsts, seconds = _seen((2048, 1024), 8)
    assert len(set(firsts)) == 4 and len(set(seconds)) == 4
    assert firsts[:4] == firsts[4:]  # in turn
    assert not set(firsts) & set(seconds)


def test_small_inputs_are_passed_as_they_are():
    """Two 64 KiB inputs are under ``_COLD_FROM`` (512 KiB): one buffer each, the caller's."""
    assert _COLD_FROM > 2 * 64 * 1024
    firsts, seconds = _seen((128, 128), 3)
    assert len(set(firsts)) == 1 and len(set(seconds)) == 1
