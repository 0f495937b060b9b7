"""``neural-cost hardware``: the detected spec, where each number came from, and calibration.

``--calibrate`` measures the host (numpy's matmul, each installed framework's matmul and
convolution, the all-core copy) and writes the fastest verified kernel per dtype to this
machine's calibration cache, which ``detect_hardware()`` and ``analyze`` then score against;
``--recalibrate`` drops the cached entry first, so the bandwidth is measured afresh too.
"""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Iterator
from typing import Any

from ..analysis.kernels import Levels, implausible_notes
from ..core.errors import NeuralCostError
from ..core.units import format_si
from ..hardware.calibrate import ProbeResult
from ..hardware.detect import DetectionResult, detect_hardware, resolve_device
from ..hardware.spec import HardwareSpec

#: Timed samples of each framework kernel: enough for a best-of, a few seconds in all on 2 cores.
KERNEL_REPEATS = 5


def render_hardware(spec: HardwareSpec, detection: DetectionResult) -> str:
    lines = [f"{spec.name} ({spec.kind}) — device {detection.device}"]
    peaks = dict(spec.peak_flops_by_dtype or {"(all dtypes)": spec.peak_flops})
    width = max(len(d) for d in peaks)
    lines.append("  peak FLOP/s        ridge (FLOP/B)  source")
    for dtype, peak in peaks.items():
        source = detection.sources.get(f"peak_flops[{dtype}]", spec.source)
        ridge = peak / spec.memory_bandwidth
        lines.append(f"  {dtype:{width}s} {format_si(peak, 'FLOP/s'):>14s} {ridge:10.2f}  {source}")
    lines.append(
        f"  memory bandwidth {format_si(spec.memory_bandwidth, 'B/s')}  "
        f"({detection.sources.get('memory_bandwidth', spec.source)})"
    )
    if spec.memory_capacity is not None:
        lines.append(
            f"  memory capacity {format_si(spec.memory_capacity, 'B')}  "
            f"({detection.sources.get('memory_capacity', spec.source)})"
        )
    for level in spec.memory_levels:
        sharing = "per core" if level.per_core else f"shared by {level.shared_by}"
        rate = format_si(level.bandwidth, "B/s") if level.bandwidth is not None else "not measured"
        lines.append(
            f"  {level.name:14s} {format_si(level.capacity_bytes, 'B'):>9s} {sharing:13s} {rate:>12s}  "
            f"({level.source}; {level.bandwidth_source or 'bandwidth: --calibrate measures it'})"
        )
    lines += [f"  note: {note}" for note in (*detection.notes, *implausible_notes(Levels.of(spec)))]
    return "\n".join(lines) + "\n"


def framework_kernels(dtypes: tuple[str, ...], size: int) -> Iterator[tuple[str, ProbeResult]]:
    """Each installed framework's matmul and convolution on the host, imported only if installed."""
    if importlib.util.find_spec("torch") is not None:
        import torch

        from ..adapters._torch.calibrate import torch_conv_probe, torch_matmul_probe

        device = torch.device("cpu")
        for dtype in dtypes:
            yield f"torch {torch.__version__}", torch_matmul_probe(device)(dtype, size, KERNEL_REPEATS)
            yield f"torch {torch.__version__}", torch_conv_probe(device)(dtype, KERNEL_REPEATS)
    if importlib.util.find_spec("jax") is not None:
        import jax

        from ..adapters._jax.calibrate import jax_conv_probe, jax_matmul_probe

        cpu = jax.devices("cpu")[0]
        for dtype in dtypes:
            yield f"jax {jax.__version__}", jax_matmul_probe(cpu)(dtype, size, KERNEL_REPEATS)
            yield f"jax {jax.__version__}", jax_conv_probe(cpu)(dtype, KERNEL_REPEATS)
    if importlib.util.find_spec("tensorflow") is not None:
        import tensorflow as tf

        from ..adapters._tf.calibrate import tf_conv_probe, tf_matmul_probe

        for dtype in dtypes:
            yield f"tensorflow {tf.__version__}", tf_matmul_probe("/CPU:0")(dtype, size, KERNEL_REPEATS)
            yield f"tensorflow {tf.__version__}", tf_conv_probe("/CPU:0")(dtype, KERNEL_REPEATS)


def _calibrate_host(args: argparse.Namespace, data: dict[str, Any]) -> None:
    from ..hardware.calibrate import calibrate
    from ..hardware.host_cache import write_entry
    from ..hardware.host_calibration import live_machine_key
    from ..hardware.kernels import best_by_dtype, kernel_label

    dtypes = tuple(d.strip() for d in args.dtypes.split(",") if d.strip())
    # numpy has no fast bfloat16/float16 matmul: it measures the dtypes it runs, the frameworks the rest
    numpy_dtypes = tuple(d for d in dtypes if d in ("float32", "float64")) or ("float32",)
    calibrated, result = calibrate(args.device, dtypes=numpy_dtypes, size=args.size)
    print(result.render(), end="")
    kernels = [("numpy", probe) for probe in result.matmuls]
    for framework, probe in framework_kernels(tuple(d for d in dtypes if d != "float64"), args.size):
        kernels.append((framework, probe))
        print(
            f"  {probe.dtype:17s} {format_si(probe.rate, 'FLOP/s')}  [{kernel_label(probe, framework)}, "
            f"best of {len(probe.samples_seconds)}; {probe.verified}]"
        )
    compute = best_by_dtype(kernels)
    path = write_entry(live_machine_key(), {"compute": compute})
    data["levels"] = _calibrate_levels()
    for dtype, figure in compute.items():
        print(f"  fastest {dtype}: {format_si(figure['flops_per_second'], 'FLOP/s')} ({figure['kernel']})")
    print(f"  cached in {path}: later runs score against these figures (--recalibrate refreshes them)")
    data["calibrated"] = calibrated.to_dict()
    data["calibration"] = result.to_dict()
    data["kernels"] = [{"framework": f, **probe.to_dict()} for f, probe in kernels]
    data["cache"] = {"path": str(path), "compute": compute}


def _calibrate_levels() -> dict[str, Any]:
    """Each cache level's bandwidth, in a compiled JAX loop where JAX is installed (a numpy loop
    pays one Python call per pass, which at L1 sizes times the interpreter), cached by level."""
    from ..hardware.host_calibration import calibrate_host_levels
    from ..hardware.level_probes import NUMPY_KERNELS

    kernels = NUMPY_KERNELS
    if importlib.util.find_spec("jax") is not None:
        from ..adapters._jax.level_probe import jax_level_kernels

        kernels = jax_level_kernels()
    section, _ = calibrate_host_levels(kernels)
    for name, figure in section.items():
        print(
            f"  {name:17s} {format_si(figure['bytes_per_second'], 'B/s')}  [{figure['pattern']}, "
            f"{figure['threads']} thread(s), {figure['bytes_per_thread'] // 1024} KiB each, best of "
            f"{figure['samples']}; verified; {figure['method']}]"
        )
    return section


def _payload(spec: HardwareSpec, detection: DetectionResult) -> dict[str, Any]:
    """``--json``'s spec and detection, and the notes on cache levels the kernel view sets aside."""
    return {
        "spec": spec.to_dict(),
        "detection": detection.to_dict(),
        "level_notes": implausible_notes(Levels.of(spec)),
    }


def run_hardware(args: argparse.Namespace) -> int:
    from .output import write_json

    recalibrate = bool(getattr(args, "recalibrate", False))
    calibrating = args.calibrate or recalibrate
    if calibrating and resolve_device(args.device).kind != "cpu":
        raise NeuralCostError(
            "--calibrate measures the host CPU here; calibrate a GPU through its framework, e.g. "
            "neural-cost analyze ... --calibrate --device cuda"
        )
    if recalibrate:
        from ..hardware.host_cache import forget_entry
        from ..hardware.host_calibration import live_machine_key

        forget_entry(live_machine_key())  # so the detection below measures the bandwidth afresh
    spec, detection = detect_hardware(args.device)
    print(render_hardware(spec, detection), end="")
    data: dict[str, Any] = _payload(spec, detection)
    if calibrating:
        _calibrate_host(args, data)
        spec, detection = detect_hardware(args.device)
        print("now scoring against:")
        print(render_hardware(spec, detection), end="")
        data.update(_payload(spec, detection))
    if args.json:
        print(f"wrote {write_json(args.json, data)}")
    return 0
