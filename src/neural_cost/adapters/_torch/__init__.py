"""The PyTorch adapter's internals: the aten op table and the dispatch-mode tracer.

Imported only by ``neural_cost.adapters.torch``, and only when PyTorch is installed.
"""
