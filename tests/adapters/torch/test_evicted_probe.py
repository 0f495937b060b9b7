"""The cost of an evicted operand (``adapters/_torch/evicted.py``): hot against cold runs of three probes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_the_cost_is_the_median_over_the_probes_of_the_cold_runs_extra_time_a_byte(monkeypatch):
    """Stubbed timings: a call on the one hot set takes 1 ms, on the ring 1.5 ms. Each probe's extra 0.5 ms over the
    bytes one call touches: the linears 4·(384·320 + 320·768 + 384·768) = 2,654,208 B → 1.8838e-10 s/B and
    4·(1024·512 + 512·512 + 1024·512) = 5,242,880 B → 9.5367e-11, the multiply 12·262,144 = 3,145,728 B →
    1.5895e-10: the median is the multiply's. A ring whose calls run no slower gives None."""
    from neural_cost.adapters._torch import evicted

    seen = []

    def timed(fn, sets, calls, start):
        seen.append(len(sets))
        return 1e-3 if len(sets) == 1 else 1.5e-3

    monkeypatch.setattr(evicted, "_median_call", timed)
    assert evicted.evicted_probe(rounds=2) == pytest.approx(0.5e-3 / 3_145_728)
    # each ring spans RING_BYTES: 64 MiB ÷ 2,654,208 B + 2 sets = 27 (26 cold), 14 (13 cold), 23 (22 cold)
    assert seen == [1, 26, 1, 26, 1, 13, 1, 13, 1, 22, 1, 22]
    monkeypatch.setattr(evicted, "_median_call", lambda fn, sets, calls, start: 1e-3)
    assert evicted.evicted_probe(rounds=1) is None


def test_the_probe_runs_on_this_machine():
    """Measured here: an evicted byte costs something, and less than 2 ns (0.5 GB/s; 19–23 GB/s on a 2-core
    Intel VM whose main memory streams 55 GB/s), or no probe ran slower cold (a cache as large as the ring)."""
    from neural_cost.adapters._torch.evicted import evicted_probe

    cost = evicted_probe(calls=4, rounds=1)
    assert cost is None or 0 < cost < 2e-9
