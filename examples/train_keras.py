"""A Keras training step — a tf.function with GradientTape — analyzed from the command line.

The step computes the loss, its gradients and the optimizer's update in one ``tf.function``;
``build()`` returns it with its arguments. The report counts the forward, the gradient ops
and the update; the model's and the optimizer's variables are put back after timing.

    neural-cost analyze examples/train_keras.py:build
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import tensorflow as tf

BATCH, FEATURES, HIDDEN, CLASSES = 32, 64, 128, 10


def build() -> tuple[object, tuple[object, ...]]:
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((FEATURES,)), keras.layers.Dense(HIDDEN, activation="relu"), keras.layers.Dense(CLASSES)]
    )
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    optimizer.build(model.trainable_variables)  # its variables exist before the step is traced
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    x = tf.random.normal((BATCH, FEATURES))
    labels = tf.random.uniform((BATCH,), 0, CLASSES, dtype=tf.int32)
    return train_step, (x, labels)
