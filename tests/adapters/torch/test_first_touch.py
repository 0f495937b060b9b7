"""The first-touch probe maps its own pages, whatever glibc's settings."""

import os
import platform
import subprocess
import sys

import pytest

PROBES = {  # PyTorch's through torch.frombuffer; JAX's and TensorFlow's through NumPy
    "torch": "from neural_cost.adapters._torch.microbench import first_touch_probe; print(first_touch_probe())",
    "numpy": "from neural_cost.measure.first_touch import first_touch_probe; print(first_touch_probe())",
}


def _probe(which: str, **environment: str) -> float:
    env = {**os.environ, **environment}
    done = subprocess.run([sys.executable, "-c", PROBES[which]], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])


@pytest.mark.parametrize("which", sorted(PROBES))
def test_the_probe_pays_first_touch_with_the_allocator_keeping_its_pages(which):
    """With MALLOC_MMAP_MAX_=0 and a 16 GiB trim threshold a freed 64 MiB tensor's pages are
    reused by the next one: a probe through ``torch.empty`` read 23-28 ns per 4 KiB page that
    way against ~1 µs with glibc's defaults. The probe maps its own pages, so both read alike
    (a ratio within one test run; the margin is 4×, the broken probe was 40× apart)."""
    pytest.importorskip(which)
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's settings are what is tested")
    default = _probe(which)
    kept = _probe(which, MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_="17179869184")
    assert default > 0 and kept > 0.25 * default, (default, kept)
