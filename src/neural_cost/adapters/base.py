"""FrameworkAdapter: the small protocol every framework (or your own) implements.

A subclass implements ``trace()`` — or only ``operations()``, in which case its trace is
100% modeled — and inherits timing, hardware and calibration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import AdapterError, HardwareError
from ..core.records import Coverage, Operation, Trace, as_shape
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement, benchmark


def example_input_shapes(inputs: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Shapes of the example inputs that have one (arrays and tensors), by position or name."""
    if isinstance(inputs, Mapping):
        items = list(inputs.items())
    elif isinstance(inputs, Sequence) and not isinstance(inputs, (str, bytes)):
        items = [(f"arg{i}", value) for i, value in enumerate(inputs)]
    else:
        items = [("arg0", inputs)]
    shapes = []
    for name, value in items:
        shape = getattr(value, "shape", None)
        if shape is not None:
            try:
                shapes.append((str(name), as_shape(tuple(shape), f"input {name} shape")))
            except Exception:  # symbolic or unknown dims: not a concrete example shape
                continue
    return tuple(shapes)


class FrameworkAdapter:
    """Turns a framework's model into portable ``Operation`` records, and times it.

    Override ``trace`` (operations plus coverage, loops, scopes) or just ``operations``.
    """

    framework: str = "custom"
    coverage_unit: str = "operations"

    def trace(self, model: Any, inputs: Any, **kwargs: Any) -> Trace:
        if type(self).operations is FrameworkAdapter.operations:
            raise NotImplementedError(
                f"{type(self).__name__} must implement trace(model, inputs) or operations(model, inputs)"
            )
        ops = self.operations(model, inputs, **kwargs)
        try:
            ops = tuple(ops)
        except TypeError:
            raise AdapterError(
                f"{type(self).__name__}.operations() returned {type(ops).__name__}, not a sequence"
            ) from None
        for i, op in enumerate(ops):
            if not isinstance(op, Operation):
                raise AdapterError(
                    f"{type(self).__name__}.operations() item {i} is a {type(op).__name__}, not an Operation"
                )
        return Trace(
            operations=ops,
            coverage=Coverage.full(ops, unit=self.coverage_unit),
            input_shapes=example_input_shapes(inputs),
            framework=self.framework,
        )

    def operations(self, model: Any, inputs: Any, **kwargs: Any) -> Sequence[Operation]:
        if type(self).trace is FrameworkAdapter.trace:
            raise NotImplementedError(
                f"{type(self).__name__} must implement trace(model, inputs) or operations(model, inputs)"
            )
        return self.trace(model, inputs, **kwargs).operations

    def benchmark(self, model: Any, *inputs: Any, warmup: int = 10, repeats: int = 30, **kwargs: Any) -> Measurement:
        """Time ``model(*inputs, **kwargs)``; framework adapters add compilation, syncing and telemetry."""
        return benchmark(model, *inputs, warmup=warmup, repeats=repeats, **kwargs)

    def hardware(self) -> HardwareSpec:
        """The spec of the device this adapter runs on: the host CPU unless overridden."""
        from ..hardware.detect import detect_hardware

        spec, _ = detect_hardware()
        return spec

    def calibrate(self, **kwargs: Any) -> Any:
        raise HardwareError(
            f"{type(self).__name__} has no calibration: pass a HardwareSpec with measured or datasheet peaks, "
            f"or use a framework adapter whose calibrate() measures its device"
        )
