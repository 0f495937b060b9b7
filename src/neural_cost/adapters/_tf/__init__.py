"""The TensorFlow adapter's internals: the graph-op table and the graph walker.

Imported only by ``neural_cost.adapters.tensorflow``, and only when TensorFlow is installed.
"""
