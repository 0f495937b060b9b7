"""All-reduce probe on XLA's host devices: the link between JAX's CPU "devices", measured.

XLA can split the host into N CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count=N``,
set before JAX initialises — so run this in a fresh process: ``python -m
neural_cost.adapters._jax.collective_probe`` prints the fit as JSON). Each sample is one
payload size: every device holds ``payload`` bytes of random float32 and a ``shard_map`` +
``lax.psum`` all-reduces them. The result is checked against numpy's sum of the same data
(every device must hold it) before anything is timed.

Timing: the all-reduce runs inside one compiled ``fori_loop`` whose pass count is a run-time
argument (one compile per size), each pass reducing the previous pass's result, so XLA can
neither fold nor hoist it. The pass count P doubles until one call takes at least
``min_sample_seconds``; then (best of ``repeats`` calls of 2P passes − best of ``repeats`` calls
of P) / P is the time of one all-reduce: the difference cancels what a call pays once (when a
stall made the 2P calls no longer than the P ones, the size is timed again with twice the passes,
``_ATTEMPTS`` times in all, before the probe refuses). The
values grow n-fold per pass and saturate at inf in long loops; IEEE inf adds at full speed (only
subnormals are slow, and growing values never become subnormal), so the timing holds.

Sizes: 4 KiB … 2 MiB per device by default, where the n devices' inputs and results (2 × n ×
payload, 16 MiB for 4 devices) stay in a server's last-level cache. Past it the all-reduce is
bound by DRAM and takes about twice as long per byte, and one latency and one bandwidth no
longer describe both regimes: on a busy 2-core EPYC (32 MiB L3) with 4 devices, 4 KiB … 16 MiB
fitted with worst residuals of 45-86% (the 16 MiB sample), 4 KiB … 2 MiB with 6-30%. Pass ``payloads``
to probe the sizes a program actually all-reduces; the source states the worst residual either way.

Wire bytes per device follow the ring convention of ``costs/collectives.py``: an all-reduce of
``p`` bytes over ``n`` devices sends 2(n−1)/n × p (rounded down). XLA's CPU all-reduce is not a
ring over a wire — the devices share memory — so the fitted "bandwidth" is how fast this
machine all-reduces per wire byte as counted, and the latency the fixed cost of one all-reduce.
``hardware/interconnect_calibration.py`` does the fit.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ...core.errors import MeasurementError
from ...hardware.interconnect import Interconnect
from ...hardware.interconnect_calibration import InterconnectFit, calibrate_interconnect

KIB = 1024
#: Bytes each device all-reduces, one sample per size: 4 KiB … 2 MiB (see "Sizes" above).
DEFAULT_PAYLOADS = (4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1024 * KIB, 2048 * KIB)
MIN_SAMPLE_SECONDS = 0.01
REPEATS = 7
NAME = "host devices (XLA CPU all-reduce)"
_AXIS = "devices"
_FLAG = "XLA_FLAGS=--xla_force_host_platform_device_count=N"


@dataclass(frozen=True, slots=True)
class AllReduceSample:
    """One payload size: the best time of one all-reduce, and the per-call samples behind it."""

    payload_bytes: int
    wire_bytes: int
    passes: int  # all-reduces in the shorter timed call (the longer runs twice as many)
    seconds: float  # (best long call − best short call) / passes
    samples_seconds: tuple[float, ...]  # each repeat's own (long − short) / passes


@dataclass(frozen=True, slots=True)
class AllReduceProbe:
    """What ``probe_all_reduce`` measured: the fitted link, the fit and its samples."""

    interconnect: Interconnect
    fit: InterconnectFit
    samples: tuple[AllReduceSample, ...]
    devices: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "interconnect": self.interconnect.to_dict(),
            "devices": self.devices,
            "worst_residual": self.fit.worst_residual,
            "latency_pinned": self.fit.latency_pinned,
            "samples": [
                {
                    "payload_bytes": s.payload_bytes,
                    "wire_bytes": s.wire_bytes,
                    "passes": s.passes,
                    "seconds": s.seconds,
                    "residual": r,
                }
                for s, r in zip(self.samples, self.fit.residuals, strict=True)
            ],
        }


def ring_all_reduce_wire_bytes(payload_bytes: int, devices: int) -> int:
    """2(n−1)/n × payload, rounded down (``costs/collectives.py``'s all-reduce convention)."""
    return 2 * (devices - 1) * payload_bytes // devices


def _host_devices(devices: Any) -> list[Any]:
    found = list(devices) if devices is not None else jax.devices("cpu")
    if len(found) < 2:
        raise MeasurementError(
            f"an all-reduce needs at least 2 devices, and JAX sees {len(found)} here; for host devices set "
            f"{_FLAG} (N ≥ 2) in the environment before JAX initialises (a fresh process: "
            f"python -m neural_cost.adapters._jax.collective_probe)"
        )
    return found


def _compiled_loop(mesh: Mesh) -> Any:
    spec, replicated = PartitionSpec(_AXIS), PartitionSpec()  # type: ignore[no-untyped-call]

    def per_device(block: Any, passes: Any) -> Any:
        return lax.fori_loop(0, passes, lambda _, carry: lax.psum(carry, _AXIS), block)  # type: ignore[no-untyped-call]

    # psum's result is the same on every device while the carry enters as each device's own block;
    # JAX's varying-axes check rejects that change of carry type, so it is off. out_specs then
    # stacks the n identical sums, one row per device, which _verify checks.
    sharded = jax.shard_map(per_device, mesh=mesh, in_specs=(spec, replicated), out_specs=spec, check_vma=False)
    return jax.jit(sharded)


def _verify(result: Any, data: np.ndarray, payload: int) -> None:
    """Every device's row must be numpy's sum of the n rows of ``data``, to float32 rounding."""
    got = np.asarray(result)
    expected = data.astype(np.float64).sum(axis=0)
    # n non-negative float32s summed in any order: each of the n − 1 adds rounds by at most 2⁻²⁴ of
    # a partial sum no larger than the total, so |error| ≤ (n − 1) · 2⁻²⁴ · sum; allowed: twice that.
    close = np.abs(got - expected) <= 2 * len(data) * 2.0**-24 * np.abs(expected)
    if not close.all():
        device, index = (int(i[0]) for i in np.nonzero(~close))
        held, total = float(got[device, index]), float(expected[index])
        raise MeasurementError(
            f"the all-reduce of {payload} bytes per device is wrong: device {device} holds {held!r} at element "
            f"{index}, numpy's sum is {total!r}; the timing would not be of an all-reduce"
        )


#: Timings of one size before the probe gives up: each again with twice the passes when 2P calls
#: took no longer than P (on 2 cores, 4 host devices' threads met in a stall that covered the P
#: calls only: 8 all-reduces best 2.9 ms against 4 in 5.7 ms).
_ATTEMPTS = 3


def _call_seconds(run: Any, x: Any, passes: int) -> float:
    start = time.perf_counter()
    jax.block_until_ready(run(x, passes))  # type: ignore[no-untyped-call]
    return time.perf_counter() - start


def _time(run: Any, x: Any, min_seconds: float, repeats: int) -> tuple[int, float, tuple[float, ...]]:
    """Seconds per all-reduce: (best call of 2P passes − best call of P passes) / P.

    The difference cancels what each call pays once (dispatch, copying the input into the loop,
    allocating and first touching the result), which at 16 MiB costs as much as a pass. P doubles
    until one call takes ``min_seconds``. Also returns each repeat's own difference (the spread)."""
    passes = 1
    while _call_seconds(run, x, passes) < min_seconds and passes < 1 << 24:
        passes *= 2
    for _ in range(_ATTEMPTS):  # a stall in the P calls can outlast the 2P ones: try again, twice as long
        shorts, longs = [], []
        for _ in range(repeats):
            shorts.append(_call_seconds(run, x, passes))
            longs.append(_call_seconds(run, x, 2 * passes))
        best = (min(longs) - min(shorts)) / passes
        if best > 0:
            return passes, best, tuple((long - short) / passes for short, long in zip(shorts, longs, strict=True))
        passes *= 2
    passes //= 2
    raise MeasurementError(
        f"{2 * passes} all-reduces took no longer than {passes} (best {min(longs):.3g} s vs {min(shorts):.3g} s; "
        f"{_ATTEMPTS} attempts, each with twice the passes): the machine is too noisy to time them; rerun on a "
        f"quieter machine or raise min_sample_seconds"
    )


def probe_all_reduce(
    payloads: tuple[int, ...] = DEFAULT_PAYLOADS,
    *,
    devices: Any = None,
    min_sample_seconds: float = MIN_SAMPLE_SECONDS,
    repeats: int = REPEATS,
    seed: int = 0,
) -> AllReduceProbe:
    """Time verified all-reduces of each payload (bytes per device) over ``devices`` (default: every
    CPU device JAX has) and fit a link to them (see the module docstring)."""
    found = _host_devices(devices)
    n = len(found)
    if len(payloads) < 2 or any(p < 4 or p % 4 for p in payloads):
        raise MeasurementError(f"payloads={payloads!r}: give at least two sizes, each a whole number of float32s")
    mesh = Mesh(np.array(found), (_AXIS,))
    sharding = NamedSharding(mesh, PartitionSpec(_AXIS))  # type: ignore[no-untyped-call]
    run = _compiled_loop(mesh)
    rng = np.random.default_rng(seed)
    samples = []
    for payload in payloads:
        data = rng.random((n, payload // 4), dtype=np.float32)
        x = jax.device_put(jnp.asarray(data), sharding)
        _verify(run(x, 1), data, payload)
        passes, seconds, spread = _time(run, x, min_sample_seconds, repeats)
        wire = ring_all_reduce_wire_bytes(payload, n)
        samples.append(AllReduceSample(payload, wire, passes, seconds, spread))
    method = (
        f"shard_map + psum of random float32 (checked against numpy's sum); per size, compiled fori_loop calls "
        f"of P and 2P passes (P chosen for ≥ {min_sample_seconds * 1e3:g} ms), seconds per all-reduce = "
        f"(best of {repeats} 2P calls − best of {repeats} P calls) / P; jax {jax.__version__}"
    )
    interconnect, fit = calibrate_interconnect(
        [(s.wire_bytes, s.seconds) for s in samples],
        name=NAME,
        what=f"all-reduces over {n} host devices",
        method=method,
    )
    return AllReduceProbe(interconnect, fit, tuple(samples), n)


def measure_all_reduce(
    payloads: tuple[int, ...] = DEFAULT_PAYLOADS,
    *,
    devices: Any = None,
    min_sample_seconds: float = MIN_SAMPLE_SECONDS,
    repeats: int = REPEATS,
) -> Interconnect:
    """The host devices' link as an Interconnect fitted to timed all-reduces (``probe_all_reduce``)."""
    probe = probe_all_reduce(payloads, devices=devices, min_sample_seconds=min_sample_seconds, repeats=repeats)
    return probe.interconnect


def main() -> None:
    """Probe, print the fit's worst residual, then the whole probe as one JSON line."""
    probe = probe_all_reduce()
    print(f"all-reduce fit over {probe.devices} host devices: worst residual {probe.fit.worst_residual:.1%}")
    print(json.dumps(probe.to_dict()))


if __name__ == "__main__":
    main()
