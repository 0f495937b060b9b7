"""Table entries for JAX's free primitives: the identity on the value (``stop_gradient``,
sharding and layout annotations, typed-key reinterpretations...), each with its reason.

Primitives that are free only for some params (a reshape without a permutation, a cast to
the same dtype...) are builders in their own family, with their reasons beside them
(``FREE_WHEN_EMPTY_REASONS``, ``CONDITIONALLY_FREE``).
"""

from __future__ import annotations

from .table import free

# -- free: the identity on the value ------------------------------------------------------

FREE_REASONS: dict[str, str] = {
    "stop_gradient": "the identity in the forward pass; it only stops gradients",
    "optimization_barrier": "a scheduling fence: its outputs are its inputs, unchanged",
    "sharding_constraint": "a sharding annotation for the partitioner; the value is unchanged "
    "(resharding across devices is communication, not counted here)",
    "reshard": "changes a value's declared sharding; on one device the buffer is unchanged "
    "(resharding across devices is communication, not counted here)",
    "pvary": "marks a value as varying over shard_map axes: type-level only, lowered to the identity",
    "name": "names a value for rematerialisation policies (checkpoint_name); the identity",
    "layout_constraint": "asks XLA for a memory layout; the identity on the value "
    "(a relayout XLA may insert is not in the jaxpr)",
    "xla_metadata_value": "attaches XLA frontend attributes to the op producing the value; the identity",
    "tie": "returns its second operand unchanged; the first only orders execution",
    "shard_alike": "makes two values share a sharding; the identity on both",
    "random_wrap": "reinterprets uint32 words as a typed PRNG key array; no data changes",
    "random_unwrap": "reinterprets a typed PRNG key array as its uint32 words; no data changes",
    "random_clone": "a key-reuse marker; the identity outside key-reuse checking",
    "dce_sink": "marks a value as used so dead-code elimination keeps it; writes nothing",
    "inspect_sharding": "hands the value's sharding to a Python callback at compile time; nothing runs on device",
}
for _name, _reason in FREE_REASONS.items():
    free(_reason, _name)
free(
    "picks a branch index by the platform the program is compiled for (lax.platform_dependent): resolved "
    "when XLA compiles, no work at run time",
    "platform_index",
)
