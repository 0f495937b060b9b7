"""The JAX adapter's internals: the primitive table, the jaxpr walker, loop inference.

The table's entries live in one module per family of ops, named as in the PyTorch and
TensorFlow adapters: ``ops_matmul``, ``ops_conv``, ``ops_norms`` (pooling), ``ops_attention``,
``ops_indexing``, ``ops_movement``, ``ops_pointwise``, ``ops_reduce``, ``ops_random_optim``,
``ops_collectives`` and ``ops_free``; ``common`` holds the helpers they share.

Imported by ``neural_cost.adapters.jax``, and only when JAX is installed — except the HLO
readers (``hlo_text``, ``hlo``, ``hlo_map``), which import no framework and also read the
optimized HLO of a TensorFlow ``jit_compile`` function (``adapters/_tf/xla.py``).
"""
