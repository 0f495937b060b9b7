"""One small exception hierarchy: every error names the thing that was wrong and what to do."""

from __future__ import annotations


class NeuralCostError(Exception):
    """Base class of every error neural-cost raises on purpose."""


class ShapeError(NeuralCostError, ValueError):
    """A shape is malformed or does not fit its operation kind."""


class UnknownKindError(NeuralCostError, ValueError):
    """An operation names a kind that has no cost rule."""


class DTypeError(NeuralCostError, ValueError):
    """An element type is not one neural-cost knows."""


class RecordError(NeuralCostError, ValueError):
    """A record (operation, trace, coverage, estimate) has an invalid field."""


class HardwareError(NeuralCostError, ValueError):
    """A hardware description is invalid, unknown or unavailable."""


class MeasurementError(NeuralCostError, ValueError):
    """A timing measurement is invalid or could not be taken."""


class SchemaError(NeuralCostError, ValueError):
    """Serialized data does not follow the schema this version reads."""


class AdapterError(NeuralCostError):
    """An adapter could not trace or run the model it was given."""


class FrameworkNotInstalledError(NeuralCostError, ImportError):
    """An adapter's framework is not installed; the message names the extra to install."""
