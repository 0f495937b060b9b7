"""How much does TensorFlowAdapter.trace cost, next to TensorFlow tracing the model at all?

Builds a small Keras CNN + transformer block, then times (best of several, one process)
``get_concrete_function`` of a fresh ``tf.function`` alone, and TensorFlowAdapter().trace()
(which includes its own get_concrete_function); prints both and the ratio.

    TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/tf_trace.py
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import tensorflow as tf

from neural_cost.adapters import TensorFlowAdapter


def model() -> keras.Model:
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Reshape((64, 32))(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.MultiHeadAttention(4, 8)(x, x))
    x = keras.layers.LSTM(32)(x)
    return keras.Model(inputs, keras.layers.Dense(10)(x))


def main() -> None:
    net = model()
    example = tf.random.normal((4, 16, 16, 3))
    spec = tf.TensorSpec(example.shape, example.dtype)
    adapter = TensorFlowAdapter()
    concrete_times, trace_times = [], []
    for _ in range(3):
        start = time.perf_counter()
        tf.function(lambda x: net(x, training=False)).get_concrete_function(spec)
        concrete_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        trace = adapter.trace(net, (example,))
        trace_times.append(time.perf_counter() - start)
    concrete, traced = min(concrete_times), min(trace_times)
    print(f"graph ops walked: {trace.coverage.total:,} ({trace.coverage.fraction:.1%} modeled or free)")
    print(f"get_concrete_function:        {concrete * 1e3:8.1f} ms")
    print(f"TensorFlowAdapter.trace:      {traced * 1e3:8.1f} ms (includes its own get_concrete_function)")
    print(f"ratio trace / get_concrete_function: {traced / concrete:.2f}")


if __name__ == "__main__":
    main()
