"""The all-reduce probe on forced XLA host devices, run in a fresh process (the device count is
fixed when JAX initialises, so it cannot be changed inside this test process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from neural_cost.adapters._jax import collective_probe
from neural_cost.core.errors import MeasurementError

DEVICES = 4


def test_ring_wire_bytes_follow_the_collective_convention():
    # 2(n − 1)/n × payload: 2 × 3 / 4 × 4096 = 6144; 2 × 1 / 2 × 4096 = 4096; n = 3 rounds down: 4 × 1000 // 3 = 1333
    assert collective_probe.ring_all_reduce_wire_bytes(4096, 4) == 6144
    assert collective_probe.ring_all_reduce_wire_bytes(4096, 2) == 4096
    assert collective_probe.ring_all_reduce_wire_bytes(1000, 3) == 1333


def test_a_wrong_all_reduce_is_caught_before_it_is_timed():
    data = np.arange(8, dtype=np.float32).reshape(2, 4)  # 2 devices × 4 elements: sums 4, 6, 8, 10
    right = np.tile(np.array([4, 6, 8, 10], np.float32), (2, 1))
    collective_probe._verify(right, data, 16)
    wrong = right.copy()
    wrong[1, 2] = 7.0  # device 1 holds 7 where the sum is 8
    with pytest.raises(MeasurementError, match=r"device 1 holds 7\.0 at element 2, numpy's sum is 8\.0"):
        collective_probe._verify(wrong, data, 16)


def test_a_stall_over_the_short_calls_is_timed_again_with_twice_the_passes(monkeypatch):
    """A pass takes 1 ms, a call 0.1 ms more: P = 1 already takes ≥ 1 ms. The first attempt's P
    calls stall (5 ms each) and its 2P calls take 2.1 ms: 2.1 − 5 < 0, so the size is timed again
    with P = 2: (4.1 − 2.1) / 2 = 1 ms an all-reduce. Every attempt stalled is an error that says so."""
    ones = []  # the calls of one pass: the first sizes P, the next two are the first attempt's P calls

    def call(run, x, passes):
        if passes == 1:
            ones.append(passes)
            if len(ones) in (2, 3):
                return 5e-3
        return passes * 1e-3 + 1e-4

    monkeypatch.setattr(collective_probe, "_call_seconds", call)
    passes, seconds, spread = collective_probe._time(None, None, 1e-3, 2)
    assert passes == 2 and seconds == pytest.approx(1e-3) and spread == pytest.approx((1e-3, 1e-3))
    monkeypatch.setattr(collective_probe, "_call_seconds", lambda run, x, p: 5e-3 if p % 2 else 1e-3)
    with pytest.raises(MeasurementError, match=r"3 attempts, each with twice the passes"):
        collective_probe._time(None, None, 1e-3, 2)  # P = 1 (5 ms), then every 2P call as fast as P or faster


def test_one_device_is_told_how_to_get_more():
    with pytest.raises(MeasurementError, match=r"JAX sees 1 here.*xla_force_host_platform_device_count"):
        collective_probe.probe_all_reduce(devices=jax.devices("cpu")[:1])


def test_the_probe_fits_verified_all_reduces_over_forced_host_devices():
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={DEVICES}".strip()
    done = subprocess.run(
        [sys.executable, "-m", "neural_cost.adapters._jax.collective_probe"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith(f"all-reduce fit over {DEVICES} host devices: worst residual ")
    probe = json.loads(lines[-1])
    link = probe["interconnect"]
    assert probe["devices"] == DEVICES and link["name"] == "host devices (XLA CPU all-reduce)"
    assert link["bandwidth"] > 0 and link["latency_seconds"] > 0
    assert link["source"].startswith(f"measured: fit of 6 all-reduces over {DEVICES} host devices")
    assert "checked against numpy's sum" in link["source"]  # the probe raises before timing a wrong result
    assert f"worst residual {probe['worst_residual']:.1%}" in link["source"]
    # 2(n − 1)/n × payload with n = 4: 4 KiB → 2 × 3 × 4096 / 4 = 6144 B; 2 MiB → 3,145,728 B
    assert [s["payload_bytes"] for s in probe["samples"]] == list(collective_probe.DEFAULT_PAYLOADS)
    assert probe["samples"][0]["wire_bytes"] == 6144 and probe["samples"][-1]["wire_bytes"] == 3_145_728
    assert all(s["seconds"] > 0 for s in probe["samples"])
