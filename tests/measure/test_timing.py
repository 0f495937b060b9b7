"""The timing harness, made testable with an injected clock."""

import statistics

import pytest

from neural_cost import Measurement, MeasurementError, benchmark
from neural_cost.measure import infer_device


class FakeClock:
    """Advances only when the workload says so: each call to work() costs the next duration."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = list(durations)
        self.calls = 0

    def __call__(self):
        return self.now

    def work(self, *args, **kwargs):
        self.calls += 1
        self.now += self.durations.pop(0)
        return args


def test_every_sample_is_recorded_and_warmup_is_separate():
    clock = FakeClock([5.0, 4.0, 1.0, 3.0, 2.0])
    m = benchmark(clock.work, warmup=2, repeats=3, clock=clock)
    assert m.warmup_seconds == (5.0, 4.0)
    assert m.samples_seconds == (1.0, 3.0, 2.0)
    assert (m.runs, m.median_seconds, m.mean_seconds, m.min_seconds) == (3, 2.0, 2.0, 1.0)
    assert m.stdev_seconds == statistics.stdev([1.0, 3.0, 2.0])  # = 1.0
    assert clock.calls == 5


def test_sync_runs_inside_the_timed_region():
    clock = FakeClock([1.0])

    def sync(result):
        clock.now += 0.5  # waiting for an asynchronous device takes time, and must be counted

    m = benchmark(lambda: None, warmup=0, repeats=1, clock=clock, sync=sync)
    assert m.samples_seconds == (0.5,)
    assert m.sync.startswith("user hook")


def test_auto_sync_waits_on_block_until_ready():
    waited = []

    class AsyncArray:
        shape = (2,)

        def block_until_ready(self):
            waited.append(True)
            return self

    m = benchmark(lambda: (AsyncArray(), [AsyncArray()]), warmup=1, repeats=2)
    assert len(waited) == 6 and m.sync == "block_until_ready"


def test_kwargs_reach_the_function():
    seen = {}

    def fn(x, *, scale):
        seen["scale"] = scale

    benchmark(fn, 1, warmup=0, repeats=1, scale=3)
    assert seen == {"scale": 3}


def test_telemetry_is_reset_before_timing_and_read_after():
    events = []

    class Telemetry:
        def reset(self):
            events.append("reset")

        def read(self):
            events.append("read")
            return {"peak_memory_bytes": 1024, "reserved_bytes": 4096}

    m = benchmark(lambda: events.append("run"), warmup=1, repeats=2, telemetry=Telemetry())
    assert events == ["run", "reset", "run", "run", "read"]
    assert m.peak_memory_bytes == 1024 and m.allocator["reserved_bytes"] == 4096
    # beside the telemetry, the timed runs' page faults (whole process, per run) on Unix
    assert set(m.allocator) <= {"reserved_bytes", "minor_page_faults_per_run", "page_bytes"}


def test_numpy_arrays_ran_on_the_host_cpu():
    np = pytest.importorskip("numpy")
    m = benchmark(np.add, np.ones(3), np.ones(3), warmup=0, repeats=1)
    assert m.device_kind == "cpu" and "array on cpu" in m.device_source


def test_device_is_read_from_tensor_like_attributes():
    class TorchDevice:
        type = "cuda"
        index = 1

    class TorchTensor:
        shape = (2,)
        device = TorchDevice()

    class JaxDevice:
        platform = "gpu"
        device_kind = "NVIDIA H100 80GB HBM3"
        id = 0

    class JaxArray:
        shape = (2,)

        def devices(self):
            return {JaxDevice()}

    class TFTensor:
        shape = (2,)
        device = "/job:localhost/replica:0/task:0/device:GPU:0"

    assert (infer_device(TorchTensor()).name, infer_device(TorchTensor()).kind) == ("cuda:1", "gpu")
    assert (infer_device(JaxArray()).name, infer_device(JaxArray()).kind) == ("NVIDIA H100 80GB HBM3", "gpu")
    assert (infer_device(TFTensor()).name, infer_device(TFTensor()).kind) == ("GPU:0", "gpu")
    assert infer_device(TorchTensor(), JaxArray()).kind == "gpu"
    assert "several devices" in infer_device(TorchTensor(), JaxArray()).source


def test_no_array_arguments_is_labelled_an_assumption():
    info = infer_device(1, "x")
    assert info.kind == "cpu" and info.source.startswith("assumed")


def test_bad_benchmark_arguments():
    with pytest.raises(MeasurementError, match="fn=3 is not callable"):
        benchmark(3)
    with pytest.raises(MeasurementError, match="repeats=0 must be an integer >= 1"):
        benchmark(lambda: None, repeats=0)
    with pytest.raises(MeasurementError, match="warmup=-1"):
        benchmark(lambda: None, warmup=-1)
    with pytest.raises(MeasurementError, match="sync='cuda'"):
        benchmark(lambda: None, sync="cuda")


def test_a_function_that_raises_is_named():
    def broken():
        raise RuntimeError("shape mismatch in layer 3")

    with pytest.raises(
        MeasurementError, match="broken raised RuntimeError while being timed: shape mismatch in layer 3"
    ):
        benchmark(broken, warmup=0, repeats=1)


def test_measurement_validation():
    with pytest.raises(MeasurementError, match="samples_seconds is empty"):
        Measurement(samples_seconds=())
    with pytest.raises(MeasurementError, match=r"samples_seconds\[1\]=-1.0"):
        Measurement(samples_seconds=(1.0, -1.0))
    with pytest.raises(MeasurementError, match=r"samples_seconds\[0\]=nan"):
        Measurement(samples_seconds=(float("nan"),))
    with pytest.raises(MeasurementError, match="device_kind='cuda'"):
        Measurement(samples_seconds=(1.0,), device_kind="cuda")


def test_measurement_roundtrip():
    import json

    m = Measurement(
        (1e-3, 2e-3),
        device="cuda:0",
        device_kind="gpu",
        warmup_seconds=(5e-3,),
        peak_memory_bytes=10,
        allocator={"reserved_bytes": 20},
        sync="block_until_ready",
    )
    assert Measurement.from_dict(json.loads(json.dumps(m.to_dict()))) == m
