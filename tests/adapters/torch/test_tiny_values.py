"""A sigmoid or SiLU on tiny inputs is named in the trace's notes (``_torch/values.py``): the expected time
reads shapes, and PyTorch's CPU sigmoid and SiLU took about 4× their time on values of 1e-18 … 1e-36."""

import torch

from neural_cost.adapters import adapter_for
from neural_cost.adapters._torch.values import SMALLEST, TINY


def _trace(fn, x):
    return adapter_for("torch").trace(fn, (x,))


def _values_notes(trace):
    return [note for note in trace.notes if note.startswith("values:")]


def test_a_sigmoid_on_tiny_values_is_noted_and_its_sampling_is_not_recorded():
    """64×128 = 8,192 standard-normal values × 1e-25 (at least ``SMALLEST``, 4,096): the median of |x| of a
    standard normal is 0.6745, so the sampled median (every 8th element: 1,024) is about 7e-26, inside
    ``TINY`` (1e-37 … 1e-17). The trace holds the sigmoid's one record and no record of the sampling."""
    assert SMALLEST == 4096 and TINY == (1e-37, 1e-17)
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(0)) * 1e-25
    trace = _trace(torch.sigmoid, x)
    assert len(trace.operations) == 1 and trace.coverage.total == 1
    [note] = _values_notes(trace)
    assert note.startswith("values: 1 of 1 sigmoid/SiLU calls ran on inputs of median magnitude ")
    low, high = note.split("median magnitude ")[1].split(", where")[0].split(" … ")
    assert 5e-26 < float(low) == float(high) < 9e-26


def test_silu_in_place_counts_and_ordinary_or_small_inputs_do_not():
    """Three calls: a SiLU in place on 8,192 values × 1e-25 (tiny), a sigmoid on standard-normal values (not
    tiny: median 0.67), a SiLU on 1,024 values × 1e-25 (under ``SMALLEST``: not sampled): 1 of 2."""
    g = torch.Generator().manual_seed(1)
    tiny, plain, small = (
        torch.randn(8192, generator=g) * 1e-25,
        torch.randn(8192, generator=g),
        torch.randn(1024, generator=g) * 1e-25,
    )

    def program(t):
        return (
            torch.nn.functional.silu(tiny.clone(), inplace=True).sum()
            + torch.sigmoid(plain).sum()
            + torch.nn.functional.silu(small).sum()
            + t
        )

    [note] = _values_notes(_trace(program, torch.ones(1)))
    assert note.startswith("values: 1 of 2 sigmoid/SiLU calls")


def test_no_note_without_tiny_values():
    """Standard-normal inputs, magnitudes of 1e-10 and 1e-39 (which ran at full speed), and a tiny bfloat16
    input (measured in float32 only) give no note."""
    g = torch.Generator().manual_seed(2)
    for scale in (1.0, 1e-10, 1e-39):
        x = torch.randn(64, 128, generator=g) * scale
        assert _values_notes(_trace(torch.sigmoid, x)) == [], scale
    x = (torch.randn(64, 128, generator=g) * 1e-25).to(torch.bfloat16)
    assert _values_notes(_trace(torch.sigmoid, x)) == []
