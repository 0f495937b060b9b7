"""How much does TorchAdapter.trace cost, next to a plain forward and FlopCounterMode?

Runs a small transformer encoder (the same model and input each time, in one process)
three ways: a plain forward under no_grad, a forward under torch's FlopCounterMode, and
TorchAdapter().trace(); prints the best of several runs and the ratios.

    .venv/bin/python benchmarks/torch_trace.py [--layers 4] [--batch 8] [--seq 128]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from neural_cost.adapters import TorchAdapter


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False).eval()
    x = torch.randn(args.batch, args.seq, 256)
    adapter = TorchAdapter()

    def plain() -> None:
        with torch.no_grad():
            model(x)

    def counted() -> None:
        with torch.no_grad(), FlopCounterMode(display=False):
            model(x)

    def traced() -> None:
        adapter.trace(model, (x,))

    plain()
    counted()
    traced()
    t_plain, t_counter, t_trace = best(plain, args.repeats), best(counted, args.repeats), best(traced, args.repeats)
    trace = adapter.trace(model, (x,))
    print(f"model: TransformerEncoder, {args.layers} layers, batch {args.batch}, sequence {args.seq}")
    print(f"aten ops traced: {trace.coverage.total:,} ({trace.coverage.fraction:.1%} modeled or free)")
    print(f"plain forward:        {t_plain * 1e3:8.2f} ms")
    print(f"FlopCounterMode:      {t_counter * 1e3:8.2f} ms  ({t_counter / t_plain:.2f}x plain)")
    print(f"TorchAdapter.trace:   {t_trace * 1e3:8.2f} ms  ({t_trace / t_plain:.2f}x plain)")
    print(f"ratio trace / FlopCounterMode: {t_trace / t_counter:.2f}")


if __name__ == "__main__":
    main()
