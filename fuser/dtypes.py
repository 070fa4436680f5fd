"""Element types of the Python API, and the type promotion the frontend applies.

Users come from nvFuser and torch, so `DataType` keeps nvFuser's names (`DataType.BFloat16`)
and maps each to the element type of the fusion dialect. The dialect itself never promotes:
operands of one op share one element type. The frontend therefore decides every result type
here, with torch's rules, and inserts the casts.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from xdsl.ir import Attribute

from fuser.dialects.fusion import ELEMENT_TYPES


class DataType(Enum):
    """The element type of a tensor or scalar; each member's value is its MLIR spelling.

    It has every member of nvFuser's `DataType`, so that definitions written for nvFuser name
    them. fuser computes the first seven; the others (unsigned, fp8, fp4, complex) are not
    `supported`, and a definition that uses one fails there, naming it. `Null` stands for "no
    dtype" where an argument may take none (a reduction's `dtype`).
    """

    Float = "f32"
    Double = "f64"
    Half = "f16"
    BFloat16 = "bf16"
    Int = "i64"
    Int32 = "i32"
    Bool = "i1"
    UInt64 = "ui64"
    Float8_e4m3fn = "f8E4M3FN"
    Float8_e5m2 = "f8E5M2"
    Float8_e8m0fnu = "f8E8M0FNU"
    Float4_e2m1fn = "f4E2M1FN"
    ComplexFloat = "complex<f32>"
    ComplexDouble = "complex<f64>"
    Null = "null"

    @property
    def supported(self) -> bool:
        """Whether fuser computes this type (it is an element type of the fusion dialect)."""
        return self in _ELEMENT_TYPES

    @property
    def element_type(self) -> Attribute:
        """The xDSL element type of the fusion dialect (`DataType.Float` -> `f32`); ValueError
        for a type fuser does not compute (`supported`)."""
        try:
            return _ELEMENT_TYPES[self]
        except KeyError:
            raise ValueError(unsupported_message(self)) from None

    @staticmethod
    def from_element_type(t: Attribute) -> DataType:
        """The DataType of a fusion-dialect element type; ValueError for any other type."""
        for dtype, el in _ELEMENT_TYPES.items():
            if el == t:
                return dtype
        raise ValueError(f"{t} is not an element type of the fusion dialect")

    @property
    def is_floating_point(self) -> bool:
        return self in (DataType.Half, DataType.BFloat16, DataType.Float, DataType.Double)

    @property
    def is_half(self) -> bool:
        """f16 and bf16: storage types whose arithmetic the frontend computes in f32."""
        return self in (DataType.Half, DataType.BFloat16)

    @property
    def is_integral(self) -> bool:
        """Int and Int32 (Bool is not counted: it has its own rules)."""
        return self in (DataType.Int, DataType.Int32)


class ParallelType(Enum):
    """How a fusion may spread its work beyond one kernel launch (`fd.parallelize`).

    `Serial` runs on one CUDA stream; `Stream` computes a tensor slice by slice along an axis,
    the slices spread over CUDA streams (`fusion.stream_axis`); `mesh_x` splits an axis of a
    tensor over the devices of its mesh (`tv.axis(i).parallelize(ParallelType.mesh_x)`, after
    `tv.set_device_mesh`; `fusion.sharding`).
    """

    Serial = "serial"
    Stream = "stream"
    mesh_x = "mesh_x"


#: Each supported DataType's element type: the one its value spells (`DataType.Float` -> `f32`).
_ELEMENT_TYPES: dict[DataType, Attribute] = {
    dtype: t for dtype in DataType for t in ELEMENT_TYPES if str(t) == dtype.value
}


def unsupported_message(dtype: DataType) -> str:
    """Why `dtype` (not `supported`) cannot be used, naming the types that can."""
    names = ", ".join(d.name for d in _ELEMENT_TYPES)
    if dtype is DataType.Null:
        return "DataType.Null is no type (it only means 'none' where a dtype is optional)"
    return f"DataType.{dtype.name} is not supported by fuser yet; it computes {names}"


_FLOAT_RANK = {DataType.Half: 0, DataType.BFloat16: 0, DataType.Float: 1, DataType.Double: 2}
_INT_RANK = {DataType.Bool: 0, DataType.Int32: 1, DataType.Int: 2}


def promote_types(a: DataType, b: DataType) -> DataType:
    """torch.promote_types on fuser's types: the smallest type holding both."""
    if a == b:
        return a
    if a.is_floating_point and b.is_floating_point:
        if {a, b} == {DataType.Half, DataType.BFloat16}:
            return DataType.Float
        return a if _FLOAT_RANK[a] > _FLOAT_RANK[b] else b
    if a.is_floating_point:
        return a
    if b.is_floating_point:
        return b
    return a if _INT_RANK[a] > _INT_RANK[b] else b


def _promote_all(dtypes: Iterable[DataType]) -> DataType | None:
    result: DataType | None = None
    for d in dtypes:
        result = d if result is None else promote_types(result, d)
    return result


def _combine_categories(higher: DataType | None, lower: DataType | None) -> DataType | None:
    """torch's rule between priority levels: a lower level only wins by a higher category."""
    if higher is None:
        return lower
    if lower is None or higher.is_floating_point:
        return higher
    if higher == DataType.Bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def number_dtype(value: bool | int | float) -> DataType:
    """The type a Python number has in promotion: Bool, Int, or Float (torch's default)."""
    if isinstance(value, bool):
        return DataType.Bool
    if isinstance(value, int):
        return DataType.Int
    return DataType.Float


def result_type(
    tensors: Iterable[DataType], scalars: Iterable[DataType], numbers: Iterable[DataType]
) -> DataType:
    """The type torch gives a pointwise op of tensors, 0-dim scalars and Python numbers.

    Tensors decide within their category (f16 + 2.0 -> f16, i32 + 1 -> i32); a scalar or a
    number changes the type only by a higher category (i32 + 2.5 -> f32, bool + 1 -> i64).
    """
    result = _combine_categories(
        _promote_all(tensors), _combine_categories(_promote_all(scalars), _promote_all(numbers))
    )
    if result is None:
        raise ValueError("result_type needs at least one operand")
    return result


def compute_dtype(dtype: DataType) -> DataType:
    """The type arithmetic on `dtype` runs in: f32 for the half types, else `dtype` itself."""
    return DataType.Float if dtype.is_half else dtype
