"""The executed units of a compiled program: kernels.

A kernel is what the program runs as one unit — an XLA fusion, custom call or copy, an aten
op in eager PyTorch, a TensorFlow graph op. Its FLOPs are *our* records' FLOPs (the records
it executes, by index into ``Trace.operations``), never the compiler's; its traffic is what
the compiled program moves: the bytes of its operands and results, once per execution.

Conventions, so that a bound can be scored from the record alone:

- ``traffic_bytes`` and ``footprint_bytes`` are per execution; ``total_traffic_bytes`` is
  ``traffic_bytes × executions``.
- ``flops_by_dtype`` is the total over all executions: the sum of its records' FLOPs, each
  already multiplied by its own count (a record's count comes from the walker's trip counts,
  a kernel's executions from the compiled program's, and the two need not agree).
- ``footprint_bytes`` counts each distinct buffer the kernel touches once: a kernel whose
  operand is also its result (in place) has a footprint smaller than its traffic.
- ``level`` is the memory level the kernel was scored at; None until a bound scores it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .attrs import EMPTY_ATTRS, FrozenAttrs
from .dtypes import canonical_dtype
from .errors import RecordError
from .shapes import check_name

__all__ = [
    "BODY",
    "COLD_RESULTS_FROM",
    "COMPILED_EXCESS",
    "FORWARDS_INPUT",
    "SLICED_DYNAMIC_SLICE",
    "STRIDED_READS",
    "VARIADIC_WINDOW",
    "Kernel",
    "check_kernels",
    "computes_beyond",
    "named_opcodes",
    "opcodes_kind",
    "recordless_kind",
    "strided_reads",
]

#: A kernel whose compiled contractions compute more than this many times its records' FLOPs runs
#: work the program does not ask (``computes_beyond``): the two count alike where XLA computes
#: what the program asks.
COMPILED_EXCESS = 2.0
#: A ``compiled_traits`` entry: the kernel (an XLA loop fusion) reads a dynamic slice of an array —
#: a loop step's row of precomputed projections — through two or more static slices of it, as a
#: GRU's three gates read theirs. On XLA:CPU such a fusion ran 4–7× slower than the same math on
#: a row sliced once (an 8×512 step of two exps read from two slices: 33 µs, against 7 µs from
#: one), as if emitted an element at a time; a loop step that reads its row once, or slices an
#: array it carries, ran at the pointwise ops' speed.
SLICED_DYNAMIC_SLICE = "sliced_dynamic_slice"
#: A ``compiled_traits`` entry read from a TensorFlow graph: the op (a pointwise one) may write its result into an
#: input's buffer — an input of its result's shape and type that another op produced and no other op reads, which
#: TensorFlow's kernels forward instead of allocating. On a 2-core VM a Relu over 8.4 MB took 380 µs so and 742 µs
#: writing a new buffer (on a persistent input, as a calibration's program had it).
FORWARDS_INPUT = "forwards_input"
#: A ``compiled_traits`` entry: the kernel runs a ``reduce-window`` of several arrays at once (a tuple result). XLA:CPU
#: expands a max pool's backward (JAX's ``select_and_scatter_add``) into one — each window's max and its position,
#: four index arrays beside the values — before a scatter-add; on a 2-core VM it ran 4.2–7.9× what the reductions'
#: curve read of its traffic (7.1 ms against 1.69 over 8 × 56² × 64 inputs, 4.6 against 0.58 over 32 × 32² × 32).
#: A record-less such kernel is ``pool_backward`` (``recordless_kind``), a class its grid times.
VARIADIC_WINDOW = "variadic_window"
#: The prefix of a ``compiled_traits`` entry of a loop fusion that computes and reads an operand across its layout
#: (a transpose fused after pointwise work), ``strided_reads:EXTRA:REUSE``: the bytes its reads load beyond the
#: operands' own (a cache line an element) and the bytes of lines they touch before each line comes back, per
#: execution (``adapters/_jax/strides.py``). On a 2-core VM a 32⁴ f32 ``relu(x·a + y)`` took 331 µs, transposed
#: (3, 1, 2, 0) in the same fusion 2,544 µs.
STRIDED_READS = "strided_reads:"
#: The prefix of a ``compiled_traits`` entry that names what a library's fusion does when its name does not say
#: (XLA:CPU's ``ynn_fusion``): ``body:reduce``, the kind its fused computation's opcodes make (``opcodes_kind``). A
#: softmax's sum that XLA:CPU 0.10.2 gave YNNPACK was such a fusion, scored at its bound as ``other``.
BODY = "body:"
#: A kernel calibration's pointwise programs write results of at least this many bytes to memory no recent
#: kernel touched (the PyTorch grid's ring of results): their curves hold that cost, so an expected time adds a
#: result its cache no longer holds (``Kernel.reuse``) only under this size (``analysis/kernel_extras.py``).
COLD_RESULTS_FROM = 512 * 1024


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(f"{where}={value!r} must be a non-negative integer")
    return value


def _indices(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise RecordError(f"{where}={value!r} must be a sequence of operation indices")
    indices = tuple(_count(v, f"{where}[{i}]") for i, v in enumerate(value))
    if len(set(indices)) != len(indices):
        raise RecordError(f"{where}={indices!r} lists an operation twice; each record belongs to a kernel once")
    return indices


def _names(value: Any, where: str, what: str) -> tuple[str, ...]:
    """A sequence of names (never one string), each checked (``check_name``), as a tuple."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise RecordError(f"{where}={value!r} must be a sequence of {what}")
    names = tuple(value)
    for i, name in enumerate(names):
        check_name(name, f"{where}[{i}]")
    return names


def _reuse(value: Any, where: str) -> tuple[tuple[int, int | None, bool], ...]:
    """``Kernel.reuse`` as a tuple of ``(bytes, since, written)``: counts, ``since`` a count or None."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise RecordError(f"{where}={value!r} must be a sequence of (bytes, since, written) regions")
    found = []
    for i, region in enumerate(value):
        if isinstance(region, (str, bytes)) or not isinstance(region, Iterable) or len(region := tuple(region)) != 3:
            raise RecordError(f"{where}[{i}]={region!r} must be (bytes, since, written)")
        size, since, written = region
        since = None if since is None else _count(since, f"{where}[{i}] since")
        if not isinstance(written, bool):
            raise RecordError(f"{where}[{i}] written={written!r} must be True or False")
        found.append((_count(size, f"{where}[{i}] bytes"), since, written))
    return tuple(found)


def _flops(value: Any, where: str) -> FrozenAttrs:
    if not isinstance(value, Mapping):
        raise RecordError(f"{where}={value!r} must map dtype names to FLOP counts")
    flops: dict[str, int] = {}
    for dtype, count in value.items():
        name = canonical_dtype(dtype, f"{where} key {dtype!r}")
        flops[name] = flops.get(name, 0) + _count(count, f"{where}[{dtype!r}]")
    return FrozenAttrs.trusted(dict(sorted(flops.items())))


@dataclass(frozen=True, slots=True)
class Kernel:
    """One executed unit of a compiled program (see the module docstring for the conventions).

    ``Kernel("fusion.3", (0, 1), {"float32": 2048}, 8192, 8192, executions=10, scopes=("layer1",))``
    is a fusion that executes records 0 and 1 (2,048 FLOPs over its 10 executions) and moves
    8,192 bytes each time it runs.
    """

    name: str
    operations: tuple[int, ...] = ()
    flops_by_dtype: Mapping[str, int] = EMPTY_ATTRS
    traffic_bytes: int = 0
    footprint_bytes: int = 0
    executions: int = 1
    scopes: tuple[str, ...] = ()
    level: str | None = None
    #: What the compiler calls it: an HLO opcode (``fusion``, ``copy``, ``custom-call``), an aten op.
    kind: str | None = None
    #: The user's line that made it (``model.py:42``), when the compiled program says.
    source: str | None = None
    #: Operations it runs that no cost rule models (an unmodeled aten op, a ``pure_callback``'s
    #: custom call): its measured time counts against time coverage.
    unmodeled: tuple[str, ...] = ()
    #: What the compiled kernel's own contractions (its dots and convolutions, by their HLO shapes,
    #: counted as records are) compute over all executions, by dtype: the compiler's work, beside
    #: ``flops_by_dtype``, the program's. Above it where XLA computes more than the program asks
    #: (a depthwise filter gradient made a dense convolution); empty where not read from HLO.
    compiled_flops_by_dtype: Mapping[str, int] = EMPTY_ATTRS
    #: The opcode of its heaviest such contraction (``convolution``, ``dot``); None without any.
    compiled_contraction: str | None = None
    #: Ways its compiled code is known to run that its records do not say, read from its HLO
    #: (``SLICED_DYNAMIC_SLICE``); empty where none is, or where not read from HLO.
    compiled_traits: tuple[str, ...] = ()
    #: How far back its data was last in use (eager PyTorch; empty where not known): for each distinct region
    #: it touches, as ``footprint_bytes`` counts them, ``(bytes, since, written)``: ``since`` the bytes the
    #: kernels between touched (their footprints) since a kernel last touched that memory — for memory not in
    #: use earlier in the run, since its last use in the run before, as a program run again and again runs —
    #: or None where not known; ``written`` whether the kernel only writes it (a result, not read).
    reuse: tuple[tuple[int, int | None, bool], ...] = ()

    def __post_init__(self) -> None:
        check_name(self.name, "Kernel.name")
        where = f"Kernel {self.name!r}"
        setattr_ = object.__setattr__
        setattr_(self, "operations", _indices(self.operations, f"{where} operations"))
        setattr_(self, "flops_by_dtype", _flops(self.flops_by_dtype, f"{where} flops_by_dtype"))
        for name in ("traffic_bytes", "footprint_bytes", "executions"):
            _count(getattr(self, name), f"{where} {name}")
        setattr_(self, "scopes", _names(self.scopes, f"{where} scopes", "scope paths"))
        check_name(self.level, f"{where} level", optional=True)
        check_name(self.kind, f"{where} kind", optional=True)
        check_name(self.source, f"{where} source", optional=True)
        raw_unmodeled: Any = self.unmodeled
        if isinstance(raw_unmodeled, (str, bytes)) or not isinstance(raw_unmodeled, Iterable):
            raise RecordError(f"{where} unmodeled={raw_unmodeled!r} must be a sequence of operation names")
        setattr_(self, "unmodeled", tuple(str(n) for n in raw_unmodeled))
        compiled = _flops(self.compiled_flops_by_dtype, f"{where} compiled_flops_by_dtype")
        setattr_(self, "compiled_flops_by_dtype", compiled)
        check_name(self.compiled_contraction, f"{where} compiled_contraction", optional=True)
        setattr_(self, "compiled_traits", _names(self.compiled_traits, f"{where} compiled_traits", "trait names"))
        setattr_(self, "reuse", _reuse(self.reuse, f"{where} reuse"))

    @property
    def flops(self) -> int:
        """FLOPs over all executions, every dtype."""
        return sum(self.flops_by_dtype.values())

    @property
    def compiled_flops(self) -> int:
        """What its compiled contractions compute over all executions, every dtype (0: not read)."""
        return sum(self.compiled_flops_by_dtype.values())

    @property
    def total_traffic_bytes(self) -> int:
        """Bytes moved over all executions."""
        return self.traffic_bytes * self.executions

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "operations": list(self.operations),
            "flops_by_dtype": dict(self.flops_by_dtype),
            "traffic_bytes": self.traffic_bytes,
            "footprint_bytes": self.footprint_bytes,
            "executions": self.executions,
            "scopes": list(self.scopes),
            "level": self.level,
            "kind": self.kind,
            "source": self.source,
            "unmodeled": list(self.unmodeled),
            "compiled_flops_by_dtype": dict(self.compiled_flops_by_dtype),
            "compiled_contraction": self.compiled_contraction,
            "compiled_traits": list(self.compiled_traits),
            **({"reuse": [{"bytes": b, "since": at, "written": w} for b, at, w in self.reuse]} if self.reuse else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Kernel:
        return cls(
            data["name"],
            tuple(data.get("operations", ())),
            data.get("flops_by_dtype", {}),
            data.get("traffic_bytes", 0),
            data.get("footprint_bytes", 0),
            data.get("executions", 1),
            tuple(data.get("scopes", ())),
            data.get("level"),
            data.get("kind"),
            data.get("source"),
            tuple(data.get("unmodeled", ())),
            data.get("compiled_flops_by_dtype", {}),
            data.get("compiled_contraction"),
            tuple(data.get("compiled_traits", ())),
            tuple((r["bytes"], r.get("since"), bool(r.get("written", False))) for r in data.get("reuse", ())),
        )


def computes_beyond(kernel: Kernel) -> bool:
    """Whether ``kernel``'s compiled contractions compute over ``COMPILED_EXCESS`` times its
    records' FLOPs (a contraction XLA made with no record of ours among them)."""
    return kernel.compiled_flops > COMPILED_EXCESS * kernel.flops


def check_kernels(kernels: Any, operations: int, where: str) -> tuple[Kernel, ...]:
    """``kernels`` as a tuple of Kernel records whose operation indices are below
    ``operations`` and claim each record at most once; RecordError naming the one that does not."""
    if isinstance(kernels, (str, bytes)) or not isinstance(kernels, Iterable):
        raise RecordError(f"{where}.kernels={kernels!r} must be a sequence of Kernel records")
    result = tuple(kernels)
    owner: dict[int, str] = {}
    for position, kernel in enumerate(result):
        if not isinstance(kernel, Kernel):
            raise RecordError(f"{where}.kernels[{position}] is a {type(kernel).__name__}, not a Kernel")
        for index in kernel.operations:
            if index >= operations:
                raise RecordError(
                    f"{where}.kernels[{position}] ({kernel.name!r}) executes operation {index}, but there are "
                    f"only {operations} operation records"
                )
            if index in owner:
                raise RecordError(
                    f"{where}: operation {index} is executed by kernel {owner[index]!r} and by {kernel.name!r}; "
                    f"a record belongs to one kernel (list XLA's duplicates in notes)"
                )
            owner[index] = kernel.name
    return result


#: HLO opcodes that only move or lay out data, those that reduce, those that compute one value an
#: element, and those among them that evaluate a function (a polynomial an element: ``transcendental``),
#: in the spelling XLA's fusion names use (``_`` for ``-``: a GPU fusion's ``dynamic_update_slice``).
_MOVES = frozenset(
    {"copy", "transpose", "bitcast", "broadcast", "slice", "concatenate", "pad", "reshape", "reverse"}
    | {"dynamic_slice", "dynamic_update_slice", "iota"}
)
_REDUCES = frozenset({"reduce", "reduce_window"})
#: Opcodes that read or write elements at computed positions: a kernel of them is read as a gather (XLA:CPU expands a
#: max pool's backward into a reduce-window of each window's max and its position, then a scatter-add).
_INDEXED = frozenset({"gather", "scatter"})
_FUNCTIONS = frozenset(
    {"exponential", "log", "tanh", "logistic", "erf", "sine", "cosine", "tan", "power", "atan2"}
    | {"exponential_minus_one", "log_plus_one", "sqrt", "rsqrt", "cbrt"}
)
_POINTWISE = _FUNCTIONS | frozenset(
    {"add", "subtract", "multiply", "divide", "select", "maximum", "minimum", "negate", "abs", "compare"}
    | {"convert", "and", "or", "xor", "not", "clamp", "sign", "floor", "ceil", "remainder", "round_nearest_even"}
    | {"round_nearest_afz", "is_finite", "reduce_precision", "real", "imag"}
)
#: Words of a fusion's name that are no opcode: what XLA:GPU prefixes (``loop_transpose_fusion``).
_NOT_OPCODES = ("fusion", "wrapped", "loop", "input", "output")


def recordless_kind(kernel: Kernel) -> str | None:
    """What a compiled kernel that runs none of our records does, read from the opcodes XLA
    names it by — a lone instruction by its opcode (``copy.3``), a fusion by its instructions'
    (``transpose_copy_fusion``, ``wrapped_reduce-window``, XLA:GPU's ``input_reduce_fusion``,
    ``multiply_add_fusion``): ``"copy"`` when they only move data (a layout change XLA inserted),
    ``"gather"`` when one reads or writes at computed positions (a scatter-add XLA made),
    ``"reduce"`` when one reduces (a reduction XLA split in parts, its prologue's arithmetic with
    it; ``"pool_backward"`` for a reduce-window of several arrays, ``VARIADIC_WINDOW``),
    ``"transcendental"`` or ``"elementwise"`` when they compute one value an element (a
    ``select`` that keeps a gradient's diagonal, an optimizer's update XLA duplicated), the first
    when one evaluates a function (``exponential``, ``tanh``, ``rsqrt``: the records' transcendentals);
    for a fusion whose name says none of these (``ynn_fusion``, a library's) the kind its body's
    opcodes make (a ``BODY`` trait); None when neither says, or the kernel is no HLO instruction
    (an aten call's kind is ``aten.add.Tensor``). The kind is read from the name where it can be,
    not the body: XLA names a fusion after a few of its instructions (XLA:GPU after its roots'
    alone), so a ``loop_add_fusion`` may also evaluate an ``exp``."""
    if kernel.kind is None or "." in kernel.kind:
        return None
    opcodes = {kernel.kind.replace("-", "_")} if kernel.kind != "fusion" else named_opcodes(kernel.name)
    if opcodes is None:  # a library's fusion: its body's kind, when the adapter read one
        return next((trait[len(BODY) :] for trait in kernel.compiled_traits if trait.startswith(BODY)), None)
    kind = opcodes_kind(opcodes)
    return "pool_backward" if kind == "reduce" and VARIADIC_WINDOW in kernel.compiled_traits else kind


def strided_reads(kernel: Kernel) -> tuple[int, int] | None:
    """A kernel's ``STRIDED_READS`` figures: ``(extra, reuse)`` bytes per execution; None without them."""
    for trait in kernel.compiled_traits:
        if trait.startswith(STRIDED_READS):
            extra, _, reuse = trait[len(STRIDED_READS) :].partition(":")
            if extra.isdigit() and reuse.isdigit():
                return int(extra), int(reuse)
    return None


def named_opcodes(name: str) -> set[str] | None:
    """The opcodes a fusion's name is made of (``transpose_copy_fusion.3``: transpose and copy); None when a
    word of it is no opcode read here (``ynn_fusion``, a library's)."""
    stem = name.split(".", 1)[0].replace("-", "_")
    for word in _NOT_OPCODES:  # whole words only: a name is opcodes joined by "_"
        stem = f"_{stem}_".replace(f"_{word}_", "_").strip("_")
    opcodes, rest = set(), f"_{stem}_"
    for spelled in sorted(_MOVES | _REDUCES | _POINTWISE | _INDEXED, key=len, reverse=True):  # longest first
        while f"_{spelled}_" in rest:  # reduce_window before reduce, dynamic_slice before slice
            opcodes.add(spelled)
            rest = rest.replace(f"_{spelled}_", "_", 1)
    return None if rest.strip("_") else opcodes


def opcodes_kind(opcodes: set[str]) -> str | None:
    """The kind a kernel of these opcodes (XLA's, ``_`` for ``-``) is read as (``recordless_kind``); None when one
    of them is none read here (a ``dot``) or there are none."""
    if not opcodes or not opcodes <= _MOVES | _REDUCES | _POINTWISE | _INDEXED:
        return None
    if opcodes & _INDEXED:
        return "gather"
    if opcodes <= _MOVES:
        return "copy"
    if opcodes & _REDUCES:
        return "reduce"
    return "transcendental" if opcodes & _FUNCTIONS else "elementwise"
