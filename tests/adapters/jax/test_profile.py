"""Measured time per kernel on JAX programs: ``JaxAdapter.profile`` (jax.profiler's XPlane on
XLA:CPU) joined to the kernels of the timed executable, through ``analyze_workload``.

What is asserted, per program:

- a Flax CNN with a ``lax.fori_loop``: every kernel has exactly ``executions × runs`` events
  (the condition of a loop with a known trip count excepted: XLA runs such a loop as a counted
  loop and its condition never runs — read from the HLO text here), and the time adds up: each
  kernel's time and the union of all ≤ the wall time of the profiled runs;
- a host callback doing ~50 ms of NumPy work among many modeled equations: equation coverage
  stays high while time coverage falls below half, and names ``pure_callback`` first;
- a jitted search (network, environment step, tree bookkeeping in one ``lax.fori_loop``, each
  in its own ``jax.named_scope``): each scope's measured time is within 25% of the same part
  timed alone (the best of a few attempts: other load on this shared machine only adds noise);
- a profiler that fails: the report still renders, without a profile, and says why.

``pytest -s`` prints the measured figures.
"""

import os
import re
import statistics
import time

import numpy as np
import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
nn = pytest.importorskip("flax.linen")
jnp = jax.numpy
lax = jax.lax

from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.analysis.workload import analyze_workload  # noqa: E402
from neural_cost.core.profile import union_seconds  # noqa: E402

#: Analyses per timing comparison at most: other load on a shared machine only adds noise.
ATTEMPTS = 8


def _counted_conditions(hlo: str) -> set[str]:
    """Instructions in the condition computations of while loops XLA knows the trip count of."""
    conditions = {
        match.group(1)
        for line in hlo.splitlines()
        if " while(" in line and "known_trip_count" in line
        for match in [re.search(r"condition=%?([\w.\-]+)", line)]
        if match
    }
    names: set[str] = set()
    current = None
    for line in hlo.splitlines():
        header = re.match(r"^%?([\w.\-]+) \(.*\{$", line.strip())
        if header:
            current = header.group(1)
        elif line.strip() == "}":
            current = None
        elif current in conditions:
            names.add(re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=", line).group(1))
    return names


# --- a Flax CNN with a fori_loop -------------------------------------------------------------


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.relu(nn.Conv(16, (3, 3))(x)) + x


class LoopCNN(nn.Module):
    """A stem convolution, then one conv block applied 4 times in a ``lax.fori_loop``, then a head."""

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(16, (3, 3), name="stem")(x))
        block = Block(name="block")
        if self.is_initializing():
            block(x)
        variables = block.variables
        x = lax.fori_loop(0, 4, lambda i, h: block.apply(variables, h), x)
        return nn.Dense(10, name="head")(jnp.mean(x, axis=(1, 2)))


def test_cnn_loop_every_kernel_has_its_executions_in_events():
    runs = 3
    model = LoopCNN()
    x = jax.random.normal(jax.random.PRNGKey(1), (8, 32, 32, 3))
    params = model.init(jax.random.PRNGKey(0), x)
    adapter = JaxAdapter()
    report = analyze_workload(adapter, model.apply, (params, x), warmup=1, repeats=3, profile_runs=runs)
    profile = report.profile
    assert profile is not None, report.profile_notes
    assert (profile.runs, profile.source) == (runs, "jax.profiler XPlane")
    kernels = report.estimate.kernels
    hlo = adapter.executables.find(model.apply, (params, x), {}, ()).compiled.as_text()
    counted = _counted_conditions(hlo)
    assert counted, "the fori_loop's condition is read from the HLO"
    # the loop's convolution runs once per iteration: 4 per run
    assert [k.executions for k in kernels if k.kind == "convolution"] == [1, 4]
    events = {m.kernel: m.events for m in profile.kernels}
    for index, kernel in enumerate(kernels):
        expected = 0 if kernel.name in counted else kernel.executions * runs
        assert events.get(index, 0) == expected, (kernel.name, kernel.executions, events.get(index, 0))
    assert sum(events.values()) == len(profile.events)  # every execution kept for the trace viewer
    assert profile.unmatched == ()  # nothing else ran
    wall = profile.wall_seconds
    for measured in profile.kernels:
        assert 0 < measured.seconds <= wall, kernels[measured.kernel].name
    assert profile.kernel_seconds <= wall
    # the union of every kernel's time: at least the longest kernel's, at most their sum (float rounding aside)
    assert max(m.seconds for m in profile.kernels) <= profile.kernel_seconds * (1 + 1e-12)
    assert profile.kernel_seconds <= sum(m.seconds for m in profile.kernels) * (1 + 1e-12)
    intervals = [(e.start_seconds, e.start_seconds + e.duration_seconds) for e in profile.events]
    assert profile.kernel_seconds == pytest.approx(union_seconds(intervals), rel=1e-9)
    assert profile.outside_seconds == pytest.approx(wall - profile.kernel_seconds) and profile.outside_seconds >= 0
    text = report.render()
    assert "measured:" in text and "outside kernels" in text
    print(f"\nCNN: {len(kernels)} kernels, events = executions × {runs} for each (counted-loop condition: 0);")
    print(f"  wall {wall / runs * 1e3:.3f} ms/run, in kernels {profile.kernel_seconds / runs * 1e3:.3f} ms/run, ")
    print(f"  outside {profile.outside_seconds / runs * 1e3:.3f} ms/run")
    for measured in sorted(profile.kernels, key=lambda m: -m.seconds):
        kernel = kernels[measured.kernel]
        per_run = measured.seconds / runs * 1e6
        print(f"  {kernel.name:28} ×{kernel.executions}  {measured.events:3} events  {per_run:9.1f} µs")


# --- an unmodeled heavy host callback ----------------------------------------------------------


def _numpy_work(x):
    out = np.asarray(x, dtype=np.float64)
    for _ in range(40):  # about 50 ms on this 2-core machine: 40 × sin + cos of 256² doubles
        out = np.sin(out) + np.cos(out)
    return out.astype(np.float32)


def _with_callback(x, w):
    for _ in range(8):
        x = jnp.tanh(x @ w) * 0.5 + 0.1
    y = jax.pure_callback(_numpy_work, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    for _ in range(4):
        y = jax.nn.relu(y @ w) - 0.1
    return jnp.sum(y)


def test_callback_time_counts_against_time_coverage():
    x = jnp.full((256, 256), 0.01, jnp.float32)
    w = jnp.full((256, 256), 0.001, jnp.float32)
    report = analyze_workload(JaxAdapter(), _with_callback, (x, w), warmup=1, repeats=3, profile_runs=2)
    coverage = report.estimate.coverage
    assert coverage.fraction >= 0.95  # every equation has a rule; the callback's counts its bytes only
    callbacks = [k for k in report.estimate.kernels if k.unmodeled]
    assert [(k.kind, k.unmodeled) for k in callbacks] == [("custom-call", ("pure_callback",))]
    time_coverage = report.time_coverage
    assert time_coverage is not None, report.profile_notes
    assert time_coverage.fraction <= 0.5
    assert time_coverage.unmodeled[0][0] == "pure_callback"
    # modeled + unmodeled is all the time in kernels
    assert time_coverage.modeled_seconds + sum(s for _, s in time_coverage.unmodeled) == pytest.approx(
        time_coverage.kernel_seconds
    )
    print(
        f"\ncallback: equations {coverage.fraction:.1%}, time {time_coverage.fraction:.1%} "
        f"(pure_callback {time_coverage.unmodeled[0][1] * 1e3:.1f} ms of {time_coverage.kernel_seconds * 1e3:.1f} ms)"
    )


_sine = jax.jit(jnp.sin)


def _runs_a_jitted_sine(x):
    return np.asarray(_sine(x))  # another XLA module, run from inside the callback


def test_events_of_another_module_are_unmatched():
    runs = 2
    x = jnp.full((64, 64), 0.5, jnp.float32)

    def program(a):
        b = jax.pure_callback(_runs_a_jitted_sine, jax.ShapeDtypeStruct(a.shape, a.dtype), a * 2.0)
        return b + 1.0

    report = analyze_workload(JaxAdapter(), program, (x,), warmup=1, repeats=2, profile_runs=runs)
    profile = report.profile
    assert profile is not None, report.profile_notes
    # the sine's own kernels, as the HLO of its executable lists them: one event each per run
    sine_kernels = re.findall(r"^\s+(?:ROOT )?%?([\w.\-]+) = \S+ fusion\(", _sine.lower(x).compile().as_text(), re.M)
    assert sine_kernels
    assert sorted((name, events) for name, _seconds, events in profile.unmatched) == sorted(
        (f"{kernel} (jit_sin)", runs) for kernel in sine_kernels
    )
    # the program's own kernels are all matched: the callback's custom call, the multiply, the add
    assert {report.estimate.kernels[m.kernel].kind for m in profile.kernels} == {"custom-call", "fusion"}
    assert all(m.events == runs for m in profile.kernels)


# --- a search: network, environment, tree, in one loop ------------------------------------------

TRIPS = 16
BATCH, WIDTH, LAYERS = 128, 512, 3
WORLD = (256, 384)
NODES, ACTIONS = 4096, 64
#: Each part is fenced so that XLA compiles it the same way in the search and alone.
fence = lax.optimization_barrier


def _net(params, obs):
    h = obs
    for w in params:
        h = fence(jnp.tanh(h @ w))
    return h[:, :ACTIONS], jnp.mean(h, axis=1)


def _env(world, action):
    x = world + 1e-3 * action
    for _ in range(3):
        x = jnp.sin(x) * jnp.cos(0.5 * x) + 0.1 * jnp.exp(-x * x)
    return x, jnp.mean(x)


def _tree(tree, i, value, reward, logits):
    visits, values = tree
    nodes = (jnp.arange(BATCH) * 37 + i * 101) % NODES
    visits = visits.at[nodes].add(1.0)
    values = values.at[nodes].add(value[:, None] + reward + logits)
    explore = jnp.sqrt(jnp.log1p(jnp.sum(visits, axis=1, keepdims=True)) / (1.0 + visits))
    return (visits, values), jnp.argmax(values / (1.0 + visits) + explore, axis=1)


def search(params, obs, world, tree):
    def simulate(i, carry):
        obs, world, tree = fence(carry)
        with jax.named_scope("net"):
            logits, value = fence(_net(params, obs))
        with jax.named_scope("env"):
            world, reward = fence(_env(world, jnp.mean(logits)))
        with jax.named_scope("tree"):
            tree, best = fence(_tree(tree, i, value, reward, logits))
        return obs + 1e-6 * (reward + best[:BATCH, None].astype(obs.dtype)), world, tree

    return lax.fori_loop(0, TRIPS, simulate, (obs, world, tree))


def net_alone(params, obs):
    def step(i, obs):
        logits, value = fence(_net(params, fence(obs)))
        return obs + 1e-6 * (value[:, None] + jnp.mean(logits))

    return lax.fori_loop(0, TRIPS, step, obs)


def env_alone(world):
    def step(i, world):
        return fence(_env(fence(world), 1e-3 * i))[0]

    return lax.fori_loop(0, TRIPS, step, world)


def tree_alone(tree, value, logits):
    def step(i, carry):
        tree, reward = fence(carry)
        tree, best = fence(_tree(tree, i, value, reward, logits))
        return tree, reward + 1e-6 * jnp.sum(best)

    return lax.fori_loop(0, TRIPS, step, (tree, 0.0))[0]


def _median_seconds(fn, args, runs=7):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def test_search_scopes_measured_like_each_part_alone():
    key = jax.random.PRNGKey(0)
    params = [jax.random.normal(jax.random.fold_in(key, i), (WIDTH, WIDTH)) / np.sqrt(WIDTH) for i in range(LAYERS)]
    obs = jax.random.normal(key, (BATCH, WIDTH))
    world = jax.random.normal(jax.random.fold_in(key, LAYERS), WORLD)
    tree = (jnp.zeros((NODES, ACTIONS)), jnp.zeros((NODES, ACTIONS)))
    logits, value = jax.jit(_net)(params, obs)
    parts = {
        "net": (jax.jit(net_alone), (params, obs)),
        "env": (jax.jit(env_alone), (world,)),
        "tree": (jax.jit(tree_alone), (tree, value, logits)),
    }
    for fn, args in parts.values():
        jax.block_until_ready(fn(*args))  # compiled and warm
    adapter = JaxAdapter()
    attempts = []
    for _ in range(ATTEMPTS):
        alone = {name: _median_seconds(fn, args) for name, (fn, args) in parts.items()}
        report = analyze_workload(adapter, search, (params, obs, world, tree), warmup=1, repeats=3, profile_runs=3)
        assert report.profile is not None, report.profile_notes
        measured = {row.name: row.measured_seconds for row in report.scope_rows if row.name in parts}
        ratios = {name: measured[name] / alone[name] for name in parts}
        attempts.append((ratios, measured, alone))
        if all(abs(ratio - 1) <= 0.25 for ratio in ratios.values()):
            break
    ratios, measured, alone = min(attempts, key=lambda a: max(abs(r - 1) for r in a[0].values()))
    print("\nsearch: per-scope measured time (one analysis, per run) vs the part alone (median of 7):")
    for name in parts:
        print(f"  {name:5} {measured[name] * 1e3:7.2f} ms vs {alone[name] * 1e3:7.2f} ms alone ({ratios[name]:.2f}×)")
    print(f"  ({len(attempts)} attempt(s))")
    assert all(seconds >= 0.005 for seconds in alone.values())  # each part is at least 5 ms per run
    assert all(abs(ratio - 1) <= 0.25 for ratio in ratios.values()), ratios


# --- the profiler's own cost ------------------------------------------------------------------


def test_profiling_at_most_doubles_the_analysis():
    """The analysis of a program (a fresh adapter and a new bound ``apply``, so JAX compiles it
    again: compile, time, trace, score) with the profiled pass takes at most twice as long as
    without it; best of a few interleaved attempts."""
    model = LoopCNN()
    x = jax.random.normal(jax.random.PRNGKey(1), (8, 32, 32, 3))
    params = model.init(jax.random.PRNGKey(0), x)

    def seconds(profile):
        start = time.perf_counter()
        report = analyze_workload(
            JaxAdapter(), model.apply, (params, x), warmup=1, repeats=3, profile=profile, profile_runs=3
        )
        assert (report.profile is not None) == profile, report.profile_notes
        return time.perf_counter() - start

    seconds(True)  # the profiler's one-time start-up, and every import, before anything is timed
    ratios = []
    for _ in range(3):
        off, on = seconds(False), seconds(True)
        ratios.append(on / off)
        if on / off <= 2:
            break
    print(f"\nprofile on / off: {', '.join(f'{r:.2f}' for r in ratios)}")
    assert min(ratios) <= 2


# --- a profiler that fails -------------------------------------------------------------------


def test_failing_profiler_is_a_note(monkeypatch):
    def unavailable(*args, **kwargs):
        raise RuntimeError("no profiler backend in this build")

    monkeypatch.setattr(jax.profiler, "trace", unavailable)
    x = jnp.ones((64, 64), jnp.float32)
    report = analyze_workload(JaxAdapter(), lambda a: jnp.tanh(a @ a), (x,), warmup=1, repeats=2, profile_runs=2)
    assert report.profile is None and report.time_coverage is None
    assert report.profile_notes[0] == (
        "no measured time per kernel: the profiled pass failed (AdapterError: jax.profiler could not record the "
        "runs (RuntimeError: no profiler backend in this build))"
    )
    text = report.render()
    assert "no profiler backend in this build" in text
    assert all(row.measured_seconds is None for row in report.operation_rows)


def test_profiler_skips_the_hlo_protos_of_every_live_executable(monkeypatch):
    """The profiler is started with ``enable_hlo_proto`` off: with it on, stopping a trace exports
    the HLO of every executable the process keeps, so one profile of a 1 ms program took 8 ms with
    one kept and 44 ms with 400 kept (a JAX kernel calibration keeps its 403 programs: 43 s of its
    216 s). The join reads the HLO from the executable itself, so nothing is lost; the events are
    still joined (one per run of the one kernel)."""
    seen = []
    trace = jax.profiler.trace

    def spy(directory, **kwargs):
        seen.append(kwargs["profiler_options"].enable_hlo_proto)
        return trace(directory, **kwargs)

    monkeypatch.setattr(jax.profiler, "trace", spy)
    x = jnp.ones((64, 64), jnp.float32)
    report = analyze_workload(JaxAdapter(), lambda a: jnp.tanh(a @ a), (x,), warmup=1, repeats=2, profile_runs=2)
    assert seen == [False]
    assert report.profile is not None and report.profile.runs == 2
    assert sum(row.measured_seconds is not None for row in report.operation_rows) >= 1
