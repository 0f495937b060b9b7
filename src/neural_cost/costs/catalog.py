"""One catalog of per-element costs for pointwise ops: arithmetic, comparison, logical,
bitwise, rounding, transcendental, activation and activation-backward ops.

Each framework's table only maps its names to these entries (PyTorch ``sigmoid``/``sigmoid_``,
JAX ``logistic``, TensorFlow ``Sigmoid`` → ``"sigmoid"``); an ``elementwise`` record names
its entry in ``attrs['op']`` and the ``elementwise`` rule reads the counts from here.

Convention, one count per op: the arithmetic of the op's mathematical definition at its
default parameters, written as kernels evaluate it (sigmoid as 1/(1+exp(-x)), softplus
with its overflow threshold). Every arithmetic, comparison, logical, bitwise, select,
min/max, abs, sign and rounding op is 1 FLOP per output element; a transcendental
function (exp, log, tanh, erf, sqrt, rsqrt, sin...) is 1 FLOP and 1 transcendental. Where
two frameworks' kernels do different work for the same definition (ELU: PyTorch multiplies
by its scale and input scale even when they are 1; TensorFlow does not), the entry counts
the definition, so the same op counts the same in every framework. Traffic is not per
entry: every input is read once at its own size and width, the output written once.
A kernel that fuses several of these ops (PyTorch's LSTM/GRU/RNN cells) has an entry
``composed`` from theirs, never a count typed again, so it counts what the same ops count
when a framework runs them one by one.

Other counters differ: PyTorch's ``FlopCounterMode`` counts no pointwise op at all (only
matmuls, convolutions and attention), and XLA's ``cost_analysis()`` counts a transcendental
as 1 transcendental and 0 FLOPs, where we count it as 1 FLOP and 1 transcendental.

Counts that depend on parameters pick an entry in the adapter that reads the parameter
(pow by a constant exponent the framework special-cases → ``square``, ``cube``, ``rsqrt``...;
PyTorch's ``add`` with alpha ≠ 1 → ``add_scaled``; ``div`` with a rounding mode →
``floor_divide``), or name their parameter for the ``elementwise`` rule (``integer_pow`` with
attrs['exponent'], counted by ``integer_pow_flops``; attrs['extra_multiplies'] for
coefficients an entry's formula leaves out). Adapters import no count from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import RecordError


@dataclass(frozen=True)
class PerElement:
    """FLOPs and transcendentals per output element, and the formula they count."""

    flops: int
    transcendentals: int = 0
    why: str = ""


def _same(count: int, transcendentals: int, why: str, *names: str) -> dict[str, PerElement]:
    return dict.fromkeys(names, PerElement(count, transcendentals, why))


_TRANSCENDENTAL = (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "erf", "erfc", "erfinv",
)  # fmt: skip
_SPECIAL_FUNCTIONS = (
    "lgamma", "digamma", "polygamma", "i0", "zeta", "igamma", "igammac", "igamma_grad_a", "betainc",
    "bessel_i0e", "bessel_i1e",
)  # fmt: skip
_SPECIAL = "a special function counted as one transcendental (XLA expands it into dozens of ops: an undercount)"

CATALOG: dict[str, PerElement] = {
    # -- arithmetic, one op each ----------------------------------------------------------------
    **_same(1, 0, "one arithmetic op", "add", "sub", "mul", "div", "neg", "abs", "sign", "reciprocal", "square"),
    **_same(1, 0, "one min/max", "maximum", "minimum", "fmax", "fmin", "relu", "clamp_min", "clamp_max"),
    **_same(1, 0, "one bit-level op on the float", "copysign", "nextafter", "signbit"),
    "mulhi": PerElement(1, 0, "the high half of an integer product"),
    "conj": PerElement(1, 0, "negates the imaginary part"),
    "reduce_precision": PerElement(1, 0, "rounds mantissa and exponent to a narrower format"),
    "add_scaled": PerElement(2, 0, "x ± alpha·y (add/sub/rsub with alpha ≠ 1): a multiply and an add"),
    "floor_divide": PerElement(2, 0, "floor(x / y): divide, floor"),
    "trunc_divide": PerElement(2, 0, "trunc(x / y): divide, trunc"),
    "remainder": PerElement(4, 0, "x - floor(x / y)·y: divide, floor, multiply, subtract"),
    "fmod": PerElement(4, 0, "x - trunc(x / y)·y: divide, trunc, multiply, subtract"),
    "frac": PerElement(2, 0, "x - trunc(x)"),
    "lerp": PerElement(3, 0, "a + w·(b - a)"),
    "addcmul": PerElement(3, 0, "s + v·a·b"),
    "addcdiv": PerElement(3, 0, "s + v·a/b"),
    "squared_difference": PerElement(2, 0, "(x - y)·(x - y): subtract, multiply"),
    "div_no_nan": PerElement(3, 0, "y == 0 ? 0 : x / y: compare, divide, select"),
    "mul_no_nan": PerElement(3, 0, "y == 0 ? 0 : x·y: compare, multiply, select"),
    "heaviside": PerElement(2, 0, "x == 0 ? v : (x > 0): compare, select"),
    "nan_to_num": PerElement(6, 0, "3 compares (nan, +inf, -inf), 3 selects"),
    "hypot": PerElement(4, 1, "sqrt(x·x + y·y)"),
    "xlogy": PerElement(4, 1, "x == 0 ? 0 : x·log(y): compare, log, multiply, select"),
    "logaddexp": PerElement(7, 2, "max(a, b) + log1p(exp(-|a - b|)): max, subtract, abs, negate, exp, log1p, add"),
    "logaddexp2": PerElement(7, 2, "logaddexp in base 2: the same 7 ops with exp2 and log2"),
    "sinc": PerElement(5, 1, "x == 0 ? 1 : sin(πx)/(πx): multiply, sin, divide, compare, select"),
    # -- rounding ----------------------------------------------------------------------------------
    **_same(1, 0, "one rounding op", "floor", "ceil", "round", "trunc"),
    "round_decimals": PerElement(3, 0, "x·10^d, round, ÷10^d"),
    # -- comparison, logical, bitwise, select --------------------------------------------------------
    **_same(1, 0, "one comparison", "eq", "ne", "lt", "le", "gt", "ge", "isposinf", "isneginf"),
    "isnan": PerElement(1, 0, "x != x"),
    "isinf": PerElement(2, 0, "|x| == inf: abs, compare"),
    "isfinite": PerElement(1, 0, "one test of the exponent bits (XLA's is_finite, TensorFlow's IsFinite)"),
    **_same(1, 0, "one logical op", "logical_and", "logical_or", "logical_xor", "logical_not"),
    **_same(
        1,
        0,
        "one bitwise op",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "bitwise_left_shift",
        "bitwise_right_shift",
        "population_count",
        "count_leading_zeros",
    ),
    "where": PerElement(1, 0, "c ? a : b: one select"),
    "clamp": PerElement(2, 0, "min(max(x, lo), hi): a max, then a min"),
    # -- no arithmetic: parts, fills, index generation --------------------------------------------------
    **_same(0, 0, "picks or packs the parts of a complex number", "real", "imag", "complex"),
    "fill": PerElement(0, 0, "writes one value everywhere"),
    "identity": PerElement(0, 0, "x itself, written to a new tensor (x ** 1)"),
    "iota": PerElement(0, 0, "writes each element's index"),
    # start + i·step (linspace: start + i·(end - start)/(n - 1), the step computed once) is the
    # index arithmetic every write does anyway: modeled as a fill, as XLA counts iota.
    "arange": PerElement(0, 0, "writes start + i·step, an index fill like iota (arange, linspace, range)"),
    # -- transcendental functions -----------------------------------------------------------------------
    **_same(1, 1, "one transcendental function", *_TRANSCENDENTAL),
    **_same(1, 1, _SPECIAL, *_SPECIAL_FUNCTIONS),
    "pow": PerElement(3, 2, "exp(y·log x): log, multiply, exp"),
    "pow_scalar_base": PerElement(2, 1, "b ** y = exp(y·log b): multiply, exp (log b computed once)"),
    "cube": PerElement(2, 0, "x·x·x"),
    "reciprocal_square": PerElement(2, 0, "1 / (x·x)"),
    # -- activations --------------------------------------------------------------------------------------
    "sigmoid": PerElement(4, 1, "1 / (1 + exp(-x)): negate, exp, add, divide"),
    "silu": PerElement(5, 1, "x·sigmoid(x): sigmoid (4), multiply (PyTorch's kernel folds it into 4)"),
    "glu": PerElement(5, 1, "a·sigmoid(b) over the two halves: sigmoid (4), multiply"),
    "gelu": PerElement(5, 1, "0.5·x·(1 + erf(x/√2)): scale, erf, add, multiply, halve"),
    "gelu_tanh": PerElement(
        9, 1, "0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): x³ (2), ·0.044715, +x, ·√(2/π), tanh, +1, ·x, ·0.5"
    ),
    "elu": PerElement(5, 1, "x > 0 ? x : α·(exp(x) - 1): compare, exp, subtract, multiply, select"),
    "selu": PerElement(6, 1, "scale·elu(x, α): elu (5), the scale's multiply"),
    "celu": PerElement(6, 1, "x > 0 ? x : α·(exp(x/α) - 1): elu (5), the divide"),
    "softplus": PerElement(6, 2, "β·x > t ? x : log1p(exp(β·x))/β: multiply, compare, exp, log1p, divide, select"),
    "mish": PerElement(4, 3, "x·tanh(log1p(exp(x))): exp, log1p, tanh, multiply"),
    "softsign": PerElement(3, 0, "x / (1 + |x|): abs, add, divide"),
    "log_sigmoid": PerElement(6, 2, "min(x, 0) - log1p(exp(-|x|)): min, abs, negate, exp, log1p, subtract"),
    "logit": PerElement(3, 1, "log(x / (1 - x)): subtract, divide, log"),
    "logit_eps": PerElement(5, 1, "logit of clamp(x, eps, 1 - eps): logit (3), a max and a min"),
    "relu6": PerElement(2, 0, "min(max(x, 0), 6)"),
    "hardtanh": PerElement(2, 0, "min(max(x, lo), hi)"),
    "threshold": PerElement(2, 0, "x > t ? x : v: compare, select"),
    "leaky_relu": PerElement(3, 0, "x > 0 ? x : a·x: compare, multiply, select"),
    "prelu": PerElement(3, 0, "x > 0 ? x : w·x: compare, multiply, select"),
    "hardswish": PerElement(5, 0, "x·min(max(x + 3, 0), 6)/6: add, max, min, multiply, divide"),
    "hardsigmoid": PerElement(4, 0, "min(max(x + 3, 0), 6)/6: add, max, min, divide"),
    "hardshrink": PerElement(4, 0, "-l <= x <= l ? 0 : x: 2 compares, and, select"),
    "softshrink": PerElement(6, 0, "x > l ? x - l : x < -l ? x + l : 0: 2 compares, subtract, add, 2 selects"),
    # -- activation backward: gradient dy in, dx out ------------------------------------------------------
    "threshold_backward": PerElement(2, 0, "x <= t ? 0 : dy"),
    "hardtanh_backward": PerElement(4, 0, "(x <= lo or x >= hi) ? 0 : dy"),
    "leaky_relu_backward": PerElement(3, 0, "x > 0 ? dy : dy·slope"),
    "sigmoid_backward": PerElement(3, 0, "dy·(1 - y)·y"),
    "tanh_backward": PerElement(3, 0, "dy·(1 - y²)"),
    "rsqrt_backward": PerElement(4, 0, "-0.5·dy·y³ from the result: cube (2), 2 multiplies"),
    "sqrt_backward": PerElement(2, 0, "dy / (2·y) from the result: multiply, divide"),
    "reciprocal_backward": PerElement(3, 0, "-dy·y² from the result: negate, 2 multiplies"),
    "silu_backward": PerElement(9, 1, "s = sigmoid(x) (4); dy·s·(1 + x·(1 - s)) (5)"),
    "gelu_backward": PerElement(11, 2, "cdf = 0.5·(1 + erf(x/√2)) 4, pdf = exp(-x²/2)/√(2π) 4, dy·(cdf + x·pdf) 3"),
    "gelu_tanh_backward": PerElement(
        18, 1, "x², x³, inner 3, tanh, 0.5·x, 1 + t, ·0.5, 1 - t² (2), inner' 3, right 2, dy·(left + right) 2"
    ),
    "elu_backward": PerElement(5, 1, "x > 0 ? dy : dy·α·exp(x): compare, exp, 2 multiplies, select"),
    "elu_backward_from_result": PerElement(4, 0, "x > 0 ? dy : dy·(y + α): compare, add, multiply, select"),
    "softplus_backward": PerElement(7, 1, "z = exp(β·x); β·x > t ? dy : dy·z/(z + 1)"),
    "mish_backward": PerElement(13, 4, "sigmoid (4), tanh(softplus) (3), dy·(t + x·s·(1 - t²)) (6)"),
    "hardswish_backward": PerElement(
        7, 0, "x < -3 ? 0 : x <= 3 ? dy·(x/3 + 0.5) : dy (2 compares, 3 arithmetic, 2 selects)"
    ),
    "hardsigmoid_backward": PerElement(5, 0, "-3 < x < 3 ? dy/6 : 0"),
    "hardshrink_backward": PerElement(4, 0, "-l <= x <= l ? 0 : dy"),
    "softshrink_backward": PerElement(4, 0, "-l <= x <= l ? 0 : dy"),
    "log_sigmoid_backward": PerElement(11, 1, "z = exp(-|x|); dy·(max' - sign·z/(1 + z)) with 2 selects on x < 0"),
    "prelu_backward": PerElement(5, 0, "x > 0: dy or w·dy; dw: 0 or x·dy: compare, 2 multiplies, 2 selects"),
    "logit_backward": PerElement(3, 0, "dy / (x·(1 - x))"),
    "logit_eps_backward": PerElement(7, 0, "logit_backward (3), 2 compares, an or, a select"),
    "native_dropout_backward": PerElement(2, 0, "dy·mask·scale"),
    "glu_backward": PerElement(9, 1, "per dy, the pair (da, db): s = sigmoid(b) 4, da = dy·s 1, db = dy·a·s·(1 - s) 4"),
}


def composed(formula: str, *terms: tuple[int, str]) -> PerElement:
    """Σ count · CATALOG[name] over ``terms``: a fused kernel counted as the catalog's own ops,
    so that it counts what the same ops count when a framework runs them one by one (a
    PyTorch LSTM layer as a Keras LSTM's Sigmoid, Tanh, Mul and AddV2). ``why`` is the
    formula followed by the terms and their total."""
    flops = sum(count * CATALOG[name].flops for count, name in terms)
    transcendentals = sum(count * CATALOG[name].transcendentals for count, name in terms)
    parts = " + ".join(f"{count} {name}" for count, name in terms)
    return PerElement(flops, transcendentals, f"{formula}: {parts} = {flops} FLOPs, {transcendentals} transcendentals")


# Recurrent cells run as one kernel (PyTorch's LSTM/GRU/RNN layers: mkldnn, cuDNN, the fused
# cells), counted as the pointwise ops they evaluate. The x-part and h-part are the two
# matmuls' outputs; "_biased": PyTorch's two bias vectors b_ih and b_hh added too (2 adds per
# gate element; Keras and Flax carry one bias, added once). An LSTM's gates record holds only
# the sums; its four activations are counted per unit in lstm_cell.
CATALOG.update(
    {
        "lstm_gates": composed("x-part + h-part, per gate element", (1, "add")),
        "lstm_gates_biased": composed("x-part + h-part + b_ih + b_hh, per gate element", (3, "add")),
        "lstm_cell": composed(
            "per unit, from c and the 4 summed gates: i, f, o = sigmoid, g = tanh, c' = f·c + i·g, h = o·tanh(c')",
            (3, "sigmoid"),
            (2, "tanh"),
            (3, "mul"),
            (1, "add"),
        ),
        "gru_gates": composed("r, z = sigmoid(x-part + h-part), per gate element", (1, "add"), (1, "sigmoid")),
        "gru_gates_biased": composed(
            "r, z = sigmoid(x-part + h-part + b_ih + b_hh), per gate element", (3, "add"), (1, "sigmoid")
        ),
        "gru_candidate": composed(
            "per unit: n = tanh(x_n + r·h_n), h' = n + z·(h - n)", (2, "add"), (2, "mul"), (1, "sub"), (1, "tanh")
        ),
        "gru_candidate_biased": composed(
            "per unit: n = tanh(x_n + b_in + r·(h_n + b_hn)), h' = n + z·(h - n)",
            (4, "add"),
            (2, "mul"),
            (1, "sub"),
            (1, "tanh"),
        ),
        "rnn_tanh": composed("h' = tanh(x-part + h-part)", (1, "add"), (1, "tanh")),
        "rnn_tanh_biased": composed("h' = tanh(x-part + h-part + b_ih + b_hh)", (3, "add"), (1, "tanh")),
        "rnn_relu": composed("h' = relu(x-part + h-part)", (1, "add"), (1, "relu")),
        "rnn_relu_biased": composed("h' = relu(x-part + h-part + b_ih + b_hh)", (3, "add"), (1, "relu")),
    }
)


def per_element(name: str) -> PerElement:
    """The catalog entry ``name``; an unknown name is an error that lists where to add it."""
    entry = CATALOG.get(name)
    if entry is None:
        raise RecordError(
            f"no pointwise catalog entry {name!r}; add one to neural_cost.costs.catalog.CATALOG "
            f"or give attrs['flops_per_element'] explicitly"
        )
    return entry


def integer_pow_flops(exponent: int) -> int:
    """FLOPs per element of x**exponent by exponentiation by squaring (JAX's lowering of
    ``integer_pow``; PyTorch's for an integer tensor): ⌊log2 |y|⌋ squarings + (popcount |y| - 1)
    multiplies, + 1 divide when y < 0, 0 for y ∈ {0, 1}. Agrees with the entries square, cube,
    reciprocal and reciprocal_square for 2, 3, -1 and -2. The ``elementwise`` rule counts an
    ``integer_pow`` record by its attrs['exponent'] with it."""
    if exponent in (0, 1):
        return 0  # a fill with ones, or x itself
    magnitude = abs(exponent)
    squarings = magnitude.bit_length() - 1
    multiplies = magnitude.bit_count() - 1
    return squarings + multiplies + (1 if exponent < 0 else 0)
