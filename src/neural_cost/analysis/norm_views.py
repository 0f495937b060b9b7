"""The view of a norm kernel that picks its kernel class (``kernel_classes``): the family ``norm``, a member by its
records' kind (``norm:batch``, ``norm:layer``), a training-mode batch norm's ``norm_training``, or a Keras batch
norm TensorFlow runs as its graph ops, ``norm:batch:keras`` (``KERAS``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.records import Operation

#: A norm kernel's member by its records' kind (one curve read a ResNet's batch norms at 3×: docs/expected.md).
NORM_MEMBERS: Mapping[str, str] = {"batchnorm": "norm:batch", "layernorm": "norm:layer"}
#: The qualifier of an inference batch norm that TensorFlow runs as Keras 3 writes it, a multiply and an add over
#: the map (and four ops a channel), one kernel of the Keras layer (``_tf/composites.py``): not the fused op
#: (``FusedBatchNormV3``) the ``norm:batch`` points time. Timed alone as Keras models of one layer, it ran 0.3–1.8×
#: the fused op of its size (17 µs against 56 µs on 16² × 16 maps, 929 µs against 504 µs on 32 × 14² × 256): one
#: curve read them alike. Without a curve of its own it reads ``norm:batch`` (a way to run, ``kernel_model.WAYS``).
KERAS = ":keras"
#: The kernel kind TensorFlow's adapter gives a Keras batch norm layer folded into one kernel.
KERAS_BATCH_NORM = "BatchNormalization"


def norm_class(records: Sequence[Operation], kernel_kind: str = "") -> str:
    """``norm_training``, else the ``NORM_MEMBERS`` member its norm records share — ``norm:batch:keras`` for a Keras
    layer's kernel (``kernel_kind``, ``KERAS_BATCH_NORM``) — else ``norm``."""
    if any(r.kind == "batchnorm" and r.attrs.get("training") for r in records):
        return "norm_training"
    members = {NORM_MEMBERS.get(r.kind, "norm") for r in records}
    member = members.pop() if len(members) == 1 else "norm"
    return member + KERAS if member == "norm:batch" and kernel_kind == KERAS_BATCH_NORM else member
