"""Detection and calibration on a real NVIDIA GPU, each figure beside its table row.

Run it whenever a GPU machine is at hand (JAX with CUDA installed):

    .venv/bin/python benchmarks/gpu_hardware.py [--size 8192] [--copy-gib 1]

It prints what NVML/nvidia-smi report, the table row detect_hardware() matched, then the
measured FP32, TF32 and BF16 matmul rates and copy bandwidth as a percentage of that row.
Measurements above 100% mean the table or the probe is wrong; well below means the chip
did not reach its datasheet peak under this probe (clocks, power, problem size).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=8192, help="matmul n (n×n·n×n)")
    parser.add_argument("--copy-gib", type=float, default=1.0, help="copy size in GiB")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write everything as JSON here")
    args = parser.parse_args()

    from neural_cost.hardware.detect import detect_hardware
    from neural_cost.hardware.nvidia import probe_nvidia

    probe = probe_nvidia()
    print("NVIDIA probe:")
    for gpu in probe.gpus:
        print(
            f"  cuda:{gpu.index} {gpu.name} · {gpu.memory_total_bytes} B · SM {gpu.max_sm_clock_mhz} MHz · {gpu.source}"
        )
    for note in probe.notes:
        print(f"  note: {note}")

    import jax

    devices = [d for d in jax.devices() if d.platform == "gpu"]
    if not devices:
        print(f"JAX sees no GPU (devices: {jax.devices()}); install jax with CUDA support", file=sys.stderr)
        return 1
    start = time.perf_counter()
    spec, detection = detect_hardware(devices[0])
    print(
        f"\ndetected in {time.perf_counter() - start:.2f} s: {spec.name} ({detection.device}), row {detection.details}"
    )
    for dtype, peak in (spec.peak_flops_by_dtype or {}).items():
        print(f"  table {dtype:14s} {peak / 1e12:9.1f} TFLOP/s")
    print(f"  table bandwidth      {spec.memory_bandwidth / 1e12:9.2f} TB/s")

    from neural_cost.adapters import JaxAdapter

    calibrated, result = JaxAdapter().calibrate(
        dtypes=("float32", "tfloat32", "bfloat16"),
        size=args.size,
        copy_bytes=int(args.copy_gib * (1 << 30)),
        repeats=args.repeats,
    )
    print()
    print(result.render(), end="")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "probe": probe.to_dict(),
                    "detected": spec.to_dict(),
                    "detection": detection.to_dict(),
                    "calibrated": calibrated.to_dict(),
                    "calibration": result.to_dict(),
                },
                handle,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
