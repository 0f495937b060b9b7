"""``neural-cost hardware``: the detected spec, where each number came from, and calibration."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.units import format_si
from ..hardware.detect import DetectionResult, detect_hardware
from ..hardware.spec import HardwareSpec


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
    lines += [f"  note: {note}" for note in detection.notes]
    return "\n".join(lines) + "\n"


def run_hardware(args: argparse.Namespace) -> int:
    from .output import write_json

    spec, detection = detect_hardware(args.device)
    print(render_hardware(spec, detection), end="")
    data: dict[str, Any] = {"spec": spec.to_dict(), "detection": detection.to_dict()}
    if args.calibrate:
        from ..hardware.calibrate import calibrate

        calibrated, result = calibrate(args.device, dtypes=tuple(args.dtypes.split(",")), size=args.size)
        print(result.render(), end="")
        data["calibrated"] = calibrated.to_dict()
        data["calibration"] = result.to_dict()
    if args.json:
        print(f"wrote {write_json(args.json, data)}")
    return 0
