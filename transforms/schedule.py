"""`fuser-schedule`: a kernel for every fusion of a module, next to it.

For each `fusion.fusion` the pass builds a `FusionInfo` (contiguous, 16-byte aligned inputs of
the shapes given by the `shapes` option, or of the static types), asks the schedulers for a
template (`propose`) and inserts the `kernel.func @<fusion>_<scheduler>` it emits after the
fusion, which stays. The kernel carries its decisions as discardable attributes, so lit tests
can check the heuristics: `fuser.scheduler`, `fuser.params` (the parameters' repr) and
`fuser.launch` (`grid=[..] block=[..] smem=..`).

`schedule_fusion` is the same step for the runtime compiler, on a `FusionInfo` of real inputs.

Options:
- `shapes`: the extents of every tensor input, in order, scalars skipped, e.g.
  `shapes="16384x4096,4096"`: one `AxBxC` per tensor input, separated by commas; a rank-0
  tensor is `()` (`shapes="8x4,(),4"`; the grammar of `fuser-run --shapes`, `SHAPES_SYNTAX`).
  It applies to every fusion of the module and may be omitted when all tensor inputs have
  static shapes.
- `arch` (default `sm_90`, at least `sm_75`) and `sm_count` (default 132): the device the
  heuristics target.
- `comments` (default true): `kernel.comment` ops naming the fusion op each piece of kernel code
  comes from (`-p 'fuser-schedule{comments=false}'` leaves them out, as the runtime compiler
  does unless `FUSER_DUMP` shows kernels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, StringAttr, TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from fuser.dialects import kernel
from fuser.dialects.fusion import FusionOp, format_shape
from fuser.transforms.schedulers import propose
from fuser.transforms.schedulers.analyses import analysis_scope
from fuser.transforms.schedulers.base import LaunchConfig, Params, Scheduler
from fuser.transforms.schedulers.info import (
    DEFAULT_ARCH,
    DEFAULT_SM_COUNT,
    DeviceInfo,
    FusionInfo,
    TensorMeta,
    arch_problem,
    parse_shapes,
)
from fuser.transforms.schedulers.kernel_builder import kernel_comments


class ScheduleOptionError(DiagnosticException):
    """A `fuser-schedule` option that does not fit the module (shapes, count, syntax)."""


OptionError = TypeVar("OptionError", bound=DiagnosticException)


@dataclass(frozen=True)
class ScheduledKernel:
    """A fusion's kernel: the scheduler that made it, its parameters, the `kernel.func` and
    its launch for the `FusionInfo` it was scheduled for."""

    scheduler: Scheduler
    params: Params
    func: kernel.FuncOp
    launch: LaunchConfig


def format_launch(launch: LaunchConfig) -> str:
    """`grid=[4, 1, 1] block=[128, 1, 1] smem=0`."""
    return f"grid={list(launch.grid)} block={list(launch.block)} smem={launch.shared_bytes}"


def schedule_fusion(
    fusion: FusionOp, info: FusionInfo, kernel_name: str | None = None, comments: bool | None = None
) -> ScheduledKernel:
    """Schedules `fusion` for `info`: the kernel is `kernel_name`, by default
    `<fusion>_<scheduler>`, with `kernel.comment` ops if `comments` (None: as the caller's
    `kernel_comments` says). Raises SchedulingError when no scheduler accepts it."""
    with analysis_scope():  # accepts' analysis serves heuristics, emit and the launch
        scheduler, params = propose(fusion, info)
        name = kernel_name or f"{fusion.sym_name.data}_{scheduler.name}"
        with kernel_comments(comments):
            func = scheduler.emit(fusion, params, name)
        launch = scheduler.launch_config(fusion, params, info)
    func.attributes["fuser.scheduler"] = StringAttr(scheduler.name)
    func.attributes["fuser.params"] = StringAttr(repr(params))
    func.attributes["fuser.launch"] = StringAttr(format_launch(launch))
    return ScheduledKernel(scheduler, params, func, launch)


def renamed_option_error(
    e: ScheduleOptionError, pass_name: str, error: type[OptionError]
) -> OptionError:
    """A `fuser-schedule` option error (of `fusion_info`) as an `error` of the
    pass `pass_name`, for passes that take the same options."""
    return error(str(e).replace("fuser-schedule:", f"{pass_name}:", 1))


def device_options(
    pass_name: str, shapes: str, arch: str, sm_count: int, error: type[DiagnosticException]
) -> tuple[list[tuple[int, ...]] | None, DeviceInfo]:
    """The `shapes`, `arch` and `sm_count` options of the pass `pass_name`, read and checked:
    a bad one raises `error` naming the pass and the option."""
    if (problem := arch_problem(arch)) is not None:
        raise error(f"{pass_name}: {problem}")
    if sm_count < 1:
        raise error(f"{pass_name}: sm_count must be at least 1, got {sm_count}")
    try:
        parsed = parse_shapes(shapes, f'shapes="{shapes}"')
    except ValueError as e:
        raise error(f"{pass_name}: {e}") from None
    return parsed, DeviceInfo(arch=arch, sm_count=sm_count)


def pass_fusion_info(
    pass_name: str,
    fusion: FusionOp,
    shapes: Sequence[tuple[int, ...]] | None,
    device: DeviceInfo,
    error: type[OptionError],
) -> FusionInfo:
    """`fusion_info` for the pass `pass_name`: shapes that do not fit the fusion raise `error`
    naming that pass."""
    try:
        return fusion_info(fusion, shapes, device)
    except ScheduleOptionError as e:
        raise renamed_option_error(e, pass_name, error) from None


RECORDED_SHAPES = "fuser.shapes"
"""The attribute in which `fuser-segment` records the `shapes` it was given, in the `shapes`
syntax, so that later passes need no `shapes` of their own."""


def recorded_shapes(
    fusion: FusionOp, pass_name: str, error: type[OptionError]
) -> list[tuple[int, ...]] | None:
    """The shapes recorded on `fusion` (`RECORDED_SHAPES`), or None; a malformed record (the
    input is text a user may have written) raises `error` naming the pass and the fusion."""
    attr = fusion.attributes.get(RECORDED_SHAPES)
    if not isinstance(attr, StringAttr):
        return None
    where = f'{RECORDED_SHAPES} = "{attr.data}" of fusion @{fusion.sym_name.data}'
    try:
        return parse_shapes(attr.data, where)
    except ValueError as e:
        raise error(f"{pass_name}: {e}") from None


def format_shapes(info: FusionInfo) -> str:
    """The tensor input shapes of `info` in the `shapes` option syntax (`"4x8,8"`): what
    `parse_shapes` reads back."""
    return ",".join("x".join(map(str, m.shape)) or "()" for m in info.inputs if m is not None)


def fusion_info(
    fusion: FusionOp, shapes: Sequence[tuple[int, ...]] | None, device: DeviceInfo
) -> FusionInfo:
    """Contiguous, 16-byte aligned inputs of the given shapes (or the static ones)."""
    name = f"fusion @{fusion.sym_name.data}"
    tensors = [(i, a) for i, a in enumerate(fusion.inputs) if isinstance(a.type, TensorType)]
    if shapes is not None and len(shapes) != len(tensors):
        raise ScheduleOptionError(
            f"fuser-schedule: shapes gives {len(shapes)} shape(s), but {name} has "
            f"{len(tensors)} tensor input(s)"
        )
    metas: list[TensorMeta | None] = [None] * len(fusion.inputs)
    for n, (i, arg) in enumerate(tensors):
        t = arg.type
        assert isinstance(t, TensorType)
        static = tuple(t.get_shape())
        what = f"input #{i}" + (f" (%{arg.name_hint})" if arg.name_hint else "")
        if shapes is None:
            if DYNAMIC_INDEX in static:
                raise ScheduleOptionError(
                    f"fuser-schedule: {what} of {name} has dynamic dims "
                    f"{format_shape(static)}: give every tensor input's shape with "
                    'shapes="AxB,..."'
                )
            shape = static
        else:
            shape = shapes[n]
            if len(shape) != len(static) or any(
                s not in (DYNAMIC_INDEX, e) for s, e in zip(static, shape, strict=True)
            ):
                raise ScheduleOptionError(
                    f"fuser-schedule: shape {list(shape)} of {what} of {name} does not match "
                    f"its type {t}"
                )
        metas[i] = TensorMeta.contiguous(shape)
    return FusionInfo(tuple(metas), device)


@dataclass(frozen=True)
class ScheduleFusionPass(ModulePass):
    """Adds a `kernel.func` for every `fusion.fusion` (see the module docstring)."""

    name = "fuser-schedule"

    shapes: str = ""
    arch: str = DEFAULT_ARCH
    sm_count: int = DEFAULT_SM_COUNT
    comments: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        shapes, device = device_options(
            self.name, self.shapes, self.arch, self.sm_count, ScheduleOptionError
        )
        for fusion in [f for f in op.walk() if isinstance(f, FusionOp)]:
            info = fusion_info(fusion, shapes, device)
            scheduled = schedule_fusion(fusion, info, comments=self.comments)
            Rewriter.insert_op(scheduled.func, InsertPoint.after(fusion))
