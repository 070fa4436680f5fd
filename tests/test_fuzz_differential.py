"""The differential fuzzer (`fuser.fuzz`): a fixed-seed run of random programs through the oracle,
the reference, every fusion-level pass and NVRTC; the oracle against hand-computed values; the
generator's coverage; the shrinker on a planted bug; the printed reproducer.
"""

from __future__ import annotations

import io
import math

import ml_dtypes
import numpy as np
import pytest

from fuser.dialects.fusion import ExpOp
from fuser.fuzz import oracle
from fuser.fuzz.differential import check_program, run, shrink_failure
from fuser.fuzz.programs import (
    ALL_OPS,
    DTYPES,
    LAYOUTS,
    Input,
    Op,
    Program,
    build,
    generate,
    make_inputs,
    to_script,
)
from fuser.runtime import reference

SEED = 1234
COUNT = 300
NVRTC_EVERY = 3  # NVRTC dominates the time: compile the kernels of every 3rd program


def test_fixed_seed_run_finds_nothing() -> None:
    """300 programs through oracle, reference and passes, 100 of them through NVRTC too."""
    out = io.StringIO()
    tally = run(SEED, COUNT, nvrtc_every=NVRTC_EVERY, out=out)
    assert tally.programs == COUNT
    assert (tally.mismatches, tally.errors, tally.generator) == (0, 0, 0), out.getvalue()


# --------------------------------------------------------------------------------------------
# The oracle against hand-computed values


def evaluate(
    inputs: list[tuple[str, np.ndarray | float | int | bool]], ops: list[Op], out: str
) -> oracle.Value:
    specs = tuple(
        Input(f"x{i}", dtype, None, value=v)
        if not isinstance(v, np.ndarray)
        else Input(f"x{i}", dtype, v.shape, tuple(-1 for _ in v.shape))
        for i, (dtype, v) in enumerate(inputs)
    )
    program = Program(specs, tuple(ops), (out,))
    (value,) = oracle.evaluate(program, [v for _, v in inputs])
    return value


@pytest.mark.parametrize(
    ("src", "dst", "nan"),
    [("f32", "i32", 0), ("f32", "i64", -(2**63)), ("f64", "i32", -(2**31))],
)
def test_oracle_cast_nan_and_inf_to_int_saturates_like_cvt_rzi(
    src: str, dst: str, nan: int
) -> None:
    """As torch on an H200: NaN is 0 from f32 to i32, the most negative integer otherwise."""
    x = np.array([np.nan, np.inf, -np.inf, 2.7, -2.7, 3e9, -3e9], np.float64)
    got = evaluate([(src, x)], [Op("cast", ("x0",), ("y",), (("dtype", dst),))], "y")
    bits = 32 if dst == "i32" else 64
    imax, imin = 2 ** (bits - 1) - 1, -(2 ** (bits - 1))
    big = imax if bits == 32 else 3_000_000_000
    np.testing.assert_array_equal(
        got.data, [nan, imax, imin, 2, -2, big, -big if bits == 64 else imin]
    )
    assert got.data.dtype == (np.int32 if bits == 32 else np.int64)


def test_oracle_pow_follows_c_pow() -> None:
    base = np.array([-2.0, -2.0, np.nan, -8.0, 0.0], np.float64)
    exponent = np.array([3.0, 0.5, 0.0, 1 / 3, -1.0], np.float64)
    got = evaluate([("f64", base), ("f64", exponent)], [Op("pow", ("x0", "x1"), ("y",))], "y")
    np.testing.assert_array_equal(got.data, [-8.0, np.nan, 1.0, np.nan, np.inf])


def test_oracle_integer_pow_is_torch_powi() -> None:
    base = np.array([0, 1, -1, -1, 2, -3, 3], np.int32)
    exponent = np.array([-9, -4, -3, -2, -1, 3, 0], np.int32)
    got = evaluate([("i32", base), ("i32", exponent)], [Op("pow", ("x0", "x1"), ("y",))], "y")
    np.testing.assert_array_equal(got.data, [0, 1, -1, 1, 0, -27, 1])
    assert got.dtype == "i32"


def test_oracle_var_mean_of_a_row_with_inf_is_nan() -> None:
    x = np.array([[1.0, np.inf, 2.0], [1.0, 2.0, 3.0]], np.float32)
    ops = [
        Op(
            "var_mean",
            ("x0",),
            ("var", "mean"),
            (("dims", [1]), ("correction", 1), ("keepdim", False)),
        )
    ]
    var = evaluate([("f32", x)], ops, "var")
    mean = evaluate([("f32", x)], ops, "mean")
    np.testing.assert_array_equal(var.data, [np.nan, 1.0])
    np.testing.assert_array_equal(mean.data, [np.inf, 2.0])


def test_oracle_rounds_half_results_once_and_keeps_f32() -> None:
    one = np.ones(2, np.float16)
    # 1 + 2**-12 is below half an f16 unit at 1: the f16 sum rounds back to 1; 0.1 as an f32
    # constant (the compute type of f16 math) is rounded to f32 first.
    got = evaluate([("f16", one)], [Op("add", ("x0", 2**-12), ("y",))], "y")
    np.testing.assert_array_equal(got.data, [1.0, 1.0])
    assert got.dtype == "f16"
    got = evaluate([("f32", np.zeros(1, np.float32))], [Op("add", ("x0", 0.1), ("y",))], "y")
    assert got.data[0] == float(np.float32(0.1)) and got.dtype == "f32"


def test_oracle_bf16_rounding_matches_single_rounding_from_f32() -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10000) * 10.0 ** rng.integers(-40, 38, 10000)).astype(np.float32)
    expected = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(oracle.round_float(x.astype(np.float64), "bf16"), expected)


@pytest.mark.parametrize(
    ("operands", "dtype"),
    [
        ([("i32", np.ones(2, np.int32)), 2.5], "f32"),
        ([("f16", np.ones(2, np.float16)), ("f64", 2.0)], "f16"),
        ([("bool", np.ones(2, bool)), 1], "i64"),
        ([("i32", np.ones(2, np.int32)), ("i64", np.ones(2, np.int64))], "i64"),
        ([("f16", np.ones(2, np.float16)), ("bf16", np.ones(2, ml_dtypes.bfloat16))], "f32"),
    ],
)
def test_oracle_promotes_as_torch(operands: list, dtype: str) -> None:
    inputs = [o for o in operands if isinstance(o, tuple)]
    args = tuple(f"x{i}" for i in range(len(inputs))) + tuple(
        o for o in operands if not isinstance(o, tuple)
    )
    got = evaluate(inputs, [Op("mul", args, ("y",))], "y")
    assert got.dtype == dtype


def test_oracle_integer_div_truncates_and_integer_sums_are_int() -> None:
    a, b = np.array([-7, 7, -7], np.int64), np.array([2, -2, -2], np.int64)
    got = evaluate([("i64", a), ("i64", b)], [Op("div", ("x0", "x1"), ("y",))], "y")
    np.testing.assert_array_equal(got.data, [-3, -3, 3])
    low = np.iinfo(np.int64).min  # |low| does not fit in int64: no absolute values
    a, b = np.array([1, low, low + 1], np.int64), np.array([low, 3, -1], np.int64)
    got = evaluate([("i64", a), ("i64", b)], [Op("div", ("x0", "x1"), ("y",))], "y")
    np.testing.assert_array_equal(got.data, [0, low // 3 + 1, -(low + 1)])
    # by zero, torch on CUDA: -1 for i32; for i64 4294967295 from dividends in [0, 2**32)
    a, b = np.array([5, -5, 0, 5_000_000_000], np.int64), np.zeros(4, np.int64)
    got = evaluate([("i64", a), ("i64", b)], [Op("div", ("x0", "x1"), ("y",))], "y")
    np.testing.assert_array_equal(got.data, [0xFFFFFFFF, -1, 0xFFFFFFFF, -1])
    a32, b32 = np.array([5, -5, 0], np.int32), np.zeros(3, np.int32)
    got = evaluate([("i32", a32), ("i32", b32)], [Op("div", ("x0", "x1"), ("y",))], "y")
    np.testing.assert_array_equal(got.data, [-1, -1, -1])
    flags = np.array([[True, False, True]])
    ops = [Op("sum", ("x0",), ("y",), (("dims", [1]), ("keepdim", False)))]
    got = evaluate([("bool", flags)], ops, "y")
    np.testing.assert_array_equal(got.data, [2])
    assert got.dtype == "i64"
    ops = [Op("prod", ("x0",), ("y",), (("dims", [1]), ("keepdim", False)))]
    got = evaluate([("i32", np.array([[65536, 65536]], np.int32))], ops, "y")
    np.testing.assert_array_equal(got.data, [2**32])  # Int: no wrap at 32 bits
    assert got.dtype == "i64"
    empty = np.zeros((2, 0), np.float32)
    ops = [Op("max", ("x0",), ("y",), (("dims", [1]), ("keepdim", True)))]
    np.testing.assert_array_equal(evaluate([("f32", empty)], ops, "y").data, [[-np.inf]] * 2)


# --------------------------------------------------------------------------------------------
# The generator


def test_generator_covers_every_op_dtype_and_layout() -> None:
    ops: set[str] = set()
    dtypes: set[str] = set()
    layouts: set[str] = set()
    extents: set[int] = set()
    for seed in range(800):  # (the rarer math ops need some 500 programs)
        p = generate(seed)
        ops |= {o.op for o in p.ops}
        dtypes |= {i.dtype for i in p.inputs}
        layouts |= {i.layout for i in p.inputs if i.shape is not None}
        extents |= {e for i in p.inputs if i.shape for e in i.shape}
    assert ops == set(ALL_OPS)
    assert dtypes == set(DTYPES)
    assert layouts == set(LAYOUTS)
    assert {0, 1, 3, 127, 129, 4097} <= extents and max(extents) > 20000


def test_generated_inputs_have_their_layouts() -> None:
    for seed in range(200):
        p = generate(seed)
        for spec, x in zip(p.inputs, make_inputs(p), strict=True):
            if spec.shape is None:
                continue
            assert x.shape == spec.shape
            if spec.layout == "broadcast":
                assert any(x.strides[d] == 0 for d in spec.broadcast_dims)
            if spec.layout == "misaligned" and x.size:
                assert x.ctypes.data % 16 != 0
            if spec.layout in ("transposed", "sliced") and x.size > 1:
                assert not x.flags.c_contiguous or 1 in x.shape


# --------------------------------------------------------------------------------------------
# The shrinker and the reproducer


def test_shrinker_reduces_a_planted_reference_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """exp off by a millionth in the reference: a failing program of 5 or more ops shrinks to
    the exp alone, on a small input, and the printed script reproduces the failure."""
    monkeypatch.setitem(reference.UNARY_FUNCTIONS, ExpOp, lambda x: np.exp(x) * (1 + 1e-6))
    candidates = (generate(s) for s in range(2000))
    program, failure = next(
        (p, f)
        for p in candidates
        if len(p.ops) >= 5 and any(o.op == "exp" for o in p.ops)
        if (f := check_program(p, nvrtc=False)) is not None
    )
    small, final = shrink_failure(program, failure, gpu=False)
    assert final.stage == "reference" and final.kind == "mismatch"
    assert [o.op for o in small.ops] == ["exp"]
    assert all(math.prod(i.shape or ()) <= 4 for i in small.inputs)
    namespace: dict[str, object] = {}
    script = to_script(small, final.stage, final.message)
    exec(compile(script, "<reproducer>", "exec"), namespace)  # prints, then checks again
    assert check_program(namespace["PROGRAM"], nvrtc=False) is not None  # type: ignore[arg-type]


def test_build_and_script_agree() -> None:
    """The printed definition builds the same fusion IR as `build`."""
    for seed in range(20):
        p = generate(seed)
        namespace: dict[str, object] = {}
        lines = to_script(p, "none", "none").split("\ninputs = ")[0]
        exec(compile(lines, "<script>", "exec"), namespace)
        assert namespace["fd"].fusion_ir() == build(p).fusion_ir()  # type: ignore[attr-defined]


def test_gpu_elements_may_match_the_float32_reference_instead() -> None:
    """Where gelu underflows to -0 in f32 and 1/x turns it into -inf, the float64 reference
    holds a large finite value: the GPU may give either. An element matching neither still
    fails, bools and NaN positions included."""
    from fuser.fuzz.differential import gpu_tolerances, mismatch
    from fuser.fuzz.oracle import Value

    tolerances = gpu_tolerances()
    f64 = np.array([-1.5e7, 2.0, np.nan])
    f32 = np.array([-np.inf, 2.0, np.nan])
    fact = Value(f64, "f32", True, "f32", 2.0)
    assert mismatch(np.array([-np.inf, 2.0, np.nan], np.float32), f64, fact, tolerances) is not None
    assert (
        mismatch(np.array([-np.inf, 2.0, np.nan], np.float32), f64, fact, tolerances, f32) is None
    )
    wrong = np.array([-np.inf, 3.0, np.nan], np.float32)
    assert "1 of 3" in str(mismatch(wrong, f64, fact, tolerances, f32))
    flags = Value(np.array([True, False]), "bool", True)
    got = np.array([False, True])
    assert mismatch(got, np.array([True, True]), flags, tolerances, np.array([True, False]))
    assert (
        mismatch(got, np.array([True, True]), flags, tolerances, np.array([False, False])) is None
    )


def test_oracle_marks_what_rounding_upstream_decides() -> None:
    """The GPU fuzzer's finds: `tanh(x) < x` holds for a tiny positive x, but CUDA's tanhf
    rounds tanh(x) to x itself, and `where` then picks the other side, whose rsqrt is NaN. Such
    elements (a comparison, a truncation, a pole within a few units of the upstream dtype of its
    boundary) and what follows from them are shaky; the runner skips them. Clear ones are not."""
    x = np.array([1e-4, 2.0, -0.5], np.float32)
    other = np.array([-1.0, 3.0, 4.0], np.float32)
    ops = [
        Op("tanh", ("x0",), ("t",)),
        Op("lt", ("t", "x0"), ("c",)),
        Op("where", ("c", "x0", "x1"), ("w",)),
        Op("rsqrt", ("w",), ("r",)),
        Op("sum", ("r",), ("s",), (("dims", [0]), ("keepdim", False))),
        Op("cast", ("x1",), ("i",), (("dtype", "i32"),)),
    ]
    inputs: list[tuple[str, np.ndarray | float | int | bool]] = [("f32", x), ("f32", other)]
    r = evaluate(inputs, ops, "r")
    assert r.shaky is not None and r.shaky.tolist() == [True, False, False]
    assert evaluate(inputs, ops, "s").shaky is not None  # the sum over a shaky element
    assert evaluate(inputs, ops, "i").shaky is None  # inputs are exact: -1.0 truncates surely
    # a cast of a computed value next to an integer is shaky
    near = evaluate(
        [("f32", np.array([3.0, 2.5], np.float32))],
        [Op("mul", ("x0", 1.0), ("m",)), Op("cast", ("m",), ("k",), (("dtype", "i64"),))],
        "k",
    )
    assert near.shaky is not None and near.shaky.tolist() == [True, False]

    # over a zero divisor a dividend near 0 decides NaN (0 / 0) or an infinity: the GPU fuzzer's
    # find, gelu(-7.6) is -0 in f32 (erff rounds to -1) and -4.6e-14 in float64
    g = np.array([-7.625, 2.0, 0.0], np.float32)
    over_zero = evaluate(
        [("f32", g)],
        [
            Op("gelu", ("x0",), ("v",), (("approximate", "none"),)),
            Op("truediv", ("v", False), ("q",)),
        ],
        "q",
    )
    assert over_zero.shaky is not None and over_zero.shaky.tolist() == [True, False, True]


def test_gpu_values_may_lie_near_either_reference_where_they_disagree() -> None:
    """gelu's `1 + erf(x / sqrt 2)` cancels below x = -3 in f32, and a reciprocal magnifies it:
    the float64 reference gave -66718, the GPU -67110. 1 / sum(x) over 35 values cancelling to
    1e-4 of their magnitude: -555.445 in float64, -555.427 from numpy's pairwise f32 sum, -555.353
    from the GPU's tree. Where the float32 reference lies away from the float64 one, a GPU value
    within 16 times that distance passes; where they agree, or the float32 one is infinite, the
    usual tolerance holds."""
    from fuser.fuzz.differential import gpu_tolerances, mismatch
    from fuser.fuzz.oracle import Value

    tolerances = gpu_tolerances()
    f64 = np.array([-66718.3, 2.0, -1.5e7])
    f32 = np.array([-66900.0, 2.0, -np.inf])
    fact = Value(f64, "f32", True, "f32", 5.0)
    assert (
        mismatch(np.array([-67109.9, 2.0, -1.5e7], np.float32), f64, fact, tolerances, f32) is None
    )
    for wrong in ([-70000.0, 2.0, -1.5e7], [-66718.3, 2.1, -1.5e7], [-66718.3, 2.0, -1.4e7]):
        assert mismatch(np.array(wrong, np.float32), f64, fact, tolerances, f32) is not None
    f64, f32 = np.array([-555.44499255]), np.array([-555.4266])
    fact = Value(f64, "f32", True, "f32", 555.0)
    assert mismatch(np.array([-555.3531], np.float32), f64, fact, tolerances, f32) is None
    assert mismatch(np.array([-549.0], np.float32), f64, fact, tolerances, f32) is not None


def test_shrinking_keeps_the_tensor_an_iota_takes_its_length_from() -> None:
    """x1 is read only for its extent (the iota's length): no shrinking step drops it, and a
    bypass renames it in the length too."""
    from fuser.fuzz.differential import _drop_dead, _renamed

    iota = Op(
        "iota", (), ("v2",), (("length", ("x1", 1)), ("start", 0), ("step", 1), ("dtype", "f32"))
    )
    x1 = Input("x1", "f32", (3, 4), (-1, -1), "contiguous", (), None)
    program = Program(inputs=(x1,), ops=(iota,), outputs=("v2",), data_seed=0, specials=False)
    assert _drop_dead(program) == program
    assert _renamed(iota, "x1", "x9").kw["length"] == ("x9", 1)
