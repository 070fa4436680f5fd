"""Sharded fusions on a simulated world: each rank's program of `fuser-shard` runs on the CPU
(its local fusions on the numpy reference, its communications through
`fuser.runtime.simulated_world.SimulatedWorld`) and every rank's outputs are compared with its
piece of the unsharded fusion's reference on the global inputs. Also the nvFuser spelling of
placements (`set_device_mesh`, `axis(i).parallelize(ParallelType.mesh_x)`, `outer_split`), the
decomposition's choices (stages, collectives, one allreduce for two sums) and the errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from multidevice_definitions import (
    broadcast_from_one,
    layer_norm,
    pipeline,
    pointwise,
    reduce_scatter_sum,
    rms_norm,
    tp_mlp,
)

from fuser import DataType, FusionDefinition, ParallelType
from fuser.dialects import fusion as fu
from fuser.dialects import host
from fuser.errors import CommunicationError, DefinitionError, InputError, ShardingError
from fuser.multidevice import DeviceMesh, rank_executor, shard_tensor
from fuser.runtime.multidevice import ReferenceRunner
from fuser.runtime.reference import evaluate
from fuser.runtime.simulated_world import SimulatedWorld
from fuser.transforms.shard import plan_sharding, rank_parts, shard_for_rank

RNG = np.random.default_rng(17)


def _array(shape: Sequence[int], dtype: Any = np.float32) -> np.ndarray:
    a = RNG.standard_normal(tuple(shape)) + 0.25  # never all zeros, a nonzero mean
    return a.astype(dtype)


def run_world(
    fd: FusionDefinition, inputs: Sequence[np.ndarray], size: int
) -> tuple[list[list[Any]], list[Any]]:
    """Each rank's outputs of `fd` on its pieces of the global `inputs`, and the unsharded
    reference's outputs."""
    fusion = fd.fusion
    plan = plan_sharding(fusion)
    world = SimulatedWorld(size)

    def rank_inputs(rank: int) -> list[Any]:
        pieces = []
        for arg, x in zip(fusion.inputs, inputs, strict=True):
            s = plan.placed.get(arg)
            if s is None or s.split_axis is None or rank not in s.devices:
                pieces.append(x)
            else:
                pieces.append(shard_tensor(x, s.split_axis, DeviceMesh(s.devices), rank))
        return pieces

    def run(comm: Any) -> list[Any]:
        executor = rank_executor(fusion, comm, ReferenceRunner())
        return executor.run(rank_inputs(comm.rank))

    return world.run(run), evaluate(fusion, inputs)


def check_world(
    fd: FusionDefinition,
    inputs: Sequence[np.ndarray],
    size: int,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> list[list[Any]]:
    """Runs `fd` on a simulated world of `size` ranks; every rank's outputs equal its pieces of
    the unsharded reference's."""
    per_rank, expected = run_world(fd, inputs, size)
    plan = plan_sharding(fd.fusion)
    for rank, outputs in enumerate(per_rank):
        for i, (got, v, want) in enumerate(
            zip(outputs, fd.fusion.output_op.values, expected, strict=True)
        ):
            s = plan.placed[v]
            if rank not in s.devices:
                assert got.size == 0, f"rank {rank} output #{i}: expected an empty tensor"
                continue
            if s.split_axis is not None:
                want = shard_tensor(want, s.split_axis, DeviceMesh(s.devices), rank)
            assert got.shape == want.shape, f"rank {rank} output #{i}"
            np.testing.assert_allclose(
                got.astype(np.float64),
                want.astype(np.float64),
                rtol=rtol,
                atol=atol,
                err_msg=f"rank {rank} output #{i}",
            )
    return per_rank


def program(fd: FusionDefinition, rank: int = 0) -> host.ProgramOp:
    return rank_parts(shard_for_rank(fd.fusion, rank))[1]


def op_names(p: host.ProgramOp) -> list[str]:
    return [op.name for op in p.body.block.ops]


# --------------------------------------------------------------------------------------------
# Semantics on simulated worlds


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("gather", [False, True])
def test_pointwise(size: int, gather: bool) -> None:
    fd = pointwise(size, gather)
    per_rank = check_world(fd, [_array((size * 5, 7))], size)
    if not gather:
        assert per_rank[0][0].shape == (5, 7)
    else:
        assert per_rank[0][0].shape == (size * 5, 7)
        assert "host.allgather" in op_names(program(fd)) or size == 1


@pytest.mark.parametrize("size", [1, 2, 4])
@pytest.mark.parametrize("rows", [1, 3, 127])
@pytest.mark.parametrize(
    "dtype", [DataType.Float, DataType.BFloat16, DataType.Half], ids=["f32", "bf16", "f16"]
)
def test_rms_norm(size: int, rows: int, dtype: DataType) -> None:
    hidden = 8 * size
    fd = rms_norm(size, hidden, dtype)
    np_dtype = {DataType.Float: np.float32, DataType.BFloat16: ml_dtypes.bfloat16}.get(
        dtype, np.float16
    )
    tol = 1e-5 if dtype == DataType.Float else 1e-2
    check_world(fd, [_array((rows, hidden), np_dtype), _array((hidden,), np_dtype)], size, tol, tol)
    names = op_names(program(fd))
    assert names.count("host.run_fusion") == 2
    assert names.count("host.allreduce") == 1  # over a mesh of one device too: the identity


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("split_weight", [True, False])
def test_layer_norm_one_allreduce_of_two_sums(size: int, split_weight: bool) -> None:
    hidden = 6 * size
    fd = layer_norm(size, hidden, split_weight)
    inputs = [_array((5, hidden)), _array((hidden,)), _array((hidden,))]
    check_world(fd, inputs, size, 1e-4, 1e-4)
    p = program(fd)
    reduces = [op for op in p.body.block.ops if isinstance(op, host.AllreduceOp)]
    assert len(reduces) == 1 and len(reduces[0].results) == 3  # two sums, one work


@pytest.mark.parametrize("size", [1, 2, 4])
@pytest.mark.parametrize("rows", [1, 6])
def test_tensor_parallel_mlp(size: int, rows: int) -> None:
    k, n = 8, 4 * size
    fd = tp_mlp(size, k, n)
    check_world(fd, [_array((rows, k)), _array((n, k)), _array((k, n))], size, 1e-4, 1e-4)
    assert op_names(program(fd)) == [
        "host.run_fusion",
        "host.allreduce",
        "host.wait",
        "host.return",
    ]


def test_reduce_scatter() -> None:
    per_rank = check_world(reduce_scatter_sum(2), [_array((16, 12))], 2)
    assert per_rank[1][0].shape == (8,)
    assert "host.reduce_scatter" in op_names(program(reduce_scatter_sum(2)))


def test_replicated_input_is_sliced_locally() -> None:
    """A replicated operand of a split op: each device slices its block, no communication."""
    size = 2
    mesh = DeviceMesh(range(size))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 8], dtype=DataType.Float)
        b = fd.define_tensor([-1, 8], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(x, b))
        x.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
    check_world(fd, [_array((3, 8)), _array((3, 8))], size)
    assert op_names(program(fd)) == ["host.run_fusion", "host.return"]
    stage = rank_parts(shard_for_rank(fd.fusion, 1))[0][0]
    slices = [op for op in stage.body.walk() if isinstance(op, fu.SliceOp)]
    assert [s.bounds()[0] for s in slices] == [(0, 4)]


def test_broadcast_from_one_device() -> None:
    fd = broadcast_from_one(3)
    per_rank = check_world(fd, [_array((5, 7))], 3)
    assert all(out[0].shape == (5, 7) for out in per_rank)
    assert "host.broadcast" in op_names(program(fd, 2))


def test_pipeline_send_recv() -> None:
    """Stage 1 on device 0, stage 2 on device 1: a send and a recv; rank 0 returns an empty
    tensor for the output it does not hold."""
    fd = pipeline()
    per_rank = check_world(fd, [_array((64, 32))], 2)
    assert per_rank[0][0].size == 0 and per_rank[1][0].shape == (64, 32)
    assert op_names(program(fd, 0)) == [
        "host.run_fusion",
        "host.send",
        "host.allocate",
        "host.wait",
        "host.return",
    ]
    assert "host.recv" in op_names(program(fd, 1))


# --------------------------------------------------------------------------------------------
# Errors


def test_unsupported_resharding_is_named() -> None:
    mesh = DeviceMesh(range(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 4], dtype=DataType.Float)
        y = fd.ops.set(x)
        fd.add_output(y)
        for t in (x, y):
            t.set_device_mesh(mesh)
        x.axis(0).parallelize(ParallelType.mesh_x)
        y.axis(1).parallelize(ParallelType.mesh_x)
    with pytest.raises(ShardingError, match=r"fusion.set.*all-to-all"):
        plan_sharding(fd.fusion)


def test_unsupported_op_on_split_tensor_is_named() -> None:
    mesh = DeviceMesh(range(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 6], dtype=DataType.Float)
        fd.add_output(fd.ops.cumsum(x, 1))
        x.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
    with pytest.raises(ShardingError, match=r"fusion.cumsum.*split operand.*gather"):
        plan_sharding(fd.fusion)


def test_split_extent_must_divide() -> None:
    mesh = DeviceMesh(range(2))
    with pytest.raises(Exception, match=r"5 is not a multiple of 2"), FusionDefinition() as fd:
        x = fd.define_tensor([3, 5], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
        x.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (lambda x, m: x.axis(0).parallelize(ParallelType.mesh_x), "set_device_mesh"),
        (lambda x, m: x.set_device_mesh([0, 1]), "DeviceMesh"),
        (
            lambda x, m: (x.set_device_mesh(m), x.outer_split(0, 3)),
            "outer split of an axis into the mesh's 2 devices",
        ),
        (
            lambda x, m: (x.set_device_mesh(m), x.axis(0).parallelize(ParallelType.Stream)),
            "not a device parallel type",
        ),
        (lambda x, m: x.axis(5), "not an axis"),
    ],
)
def test_schedule_mistakes_are_definition_errors(
    schedule: Callable[[Any, DeviceMesh], Any], message: str
) -> None:
    with pytest.raises(DefinitionError, match=message), FusionDefinition() as fd:
        x = fd.define_tensor([4, 4], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
        schedule(x, DeviceMesh(range(2)))


def test_device_mesh_checks_its_ranks() -> None:
    for bad in ([], [0, 0], [-1], "01", [0.5]):
        with pytest.raises(DefinitionError, match="DeviceMesh"):
            DeviceMesh(bad)  # type: ignore[arg-type]
    assert DeviceMesh(np.arange(3)).size == 3


def test_world_too_small_is_a_clear_error() -> None:
    fd = pointwise(4, gather=True)
    with pytest.raises(CommunicationError, match=r"needs? .*4|4 process|fuser-launch -n 4"):
        rank_executor(fd.fusion, None, ReferenceRunner())


def test_wrong_piece_is_an_input_error() -> None:
    fd = rms_norm(2, 8)
    world = SimulatedWorld(2)

    def run(comm: Any) -> Any:
        ex = rank_executor(fd.fusion, comm, ReferenceRunner())
        return ex.run([_array((3, 8)), _array((4,))])  # the whole x, not the rank's piece

    with pytest.raises(InputError, match=r"input #0 .* rank \d must be this rank's piece"):
        world.run(run)


def test_fd_parallelize_mesh_x_is_the_axis_spelling() -> None:
    mesh = DeviceMesh(range(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 6], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
        x.set_device_mesh(mesh)
        fd.parallelize(x, 1, ParallelType.mesh_x)
    assert "#fusion.sharding<mesh [0, 1], axis 1>" in fd.fusion_ir()
    assert "fd.parallelize(T0, 1, ParallelType.mesh_x)" in fd.python_definition()


def test_full_sized_by_a_split_extent_is_split_alike() -> None:
    mesh = DeviceMesh(range(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=DataType.Float)
        f = fd.ops.full([x.size(1)], 1.5, DataType.Float)
        fd.add_output(fd.ops.add(f, fd.ops.sum(x, [0])))
        x.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
    check_world(fd, [_array((3, 8))], 2)


def test_scalar_arithmetic_is_recomputed_in_each_stage() -> None:
    mesh = DeviceMesh(range(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 8], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        scale = fd.ops.add(s, 1.0)
        total = fd.ops.sum(fd.ops.mul(x, scale), [1], keepdim=True)
        fd.add_output(fd.ops.mul(fd.ops.div(x, total), scale))
        x.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
    check_world(fd, [_array((5, 8)), np.float32(0.5)], 2)  # type: ignore[list-item]


def test_an_output_a_later_stage_reads_is_written_once() -> None:
    mesh = DeviceMesh(range(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 8], dtype=DataType.Float)
        e = fd.ops.exp(x)
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, [1], keepdim=True)))
        fd.add_output(e)
        x.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
    check_world(fd, [_array((4, 8))], 2)
    fusions, _ = rank_parts(shard_for_rank(fd.fusion, 0))
    written = [len(f.function_type.outputs.data) for f in fusions]
    assert written == [2, 1]  # stage 0: e and the partial sum; stage 1: the quotient


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("send", r"moves %t2 of type tensor<\?x4xf32> .*\(sendrecv\).* shape must be static"),
        ("broadcast", r"\(broadcast\).* shape must be static"),
    ],
)
def test_a_received_tensor_needs_a_static_shape(schedule: str, message: str) -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4], dtype=DataType.Float)
        h = fd.ops.set(fd.ops.tanh(x))
        fd.add_output(h)
        x.set_device_mesh(DeviceMesh([0]))
        h.set_device_mesh(DeviceMesh([1] if schedule == "send" else [0, 1]))
    with pytest.raises(ShardingError, match=message):
        plan_sharding(fd.fusion)


def test_squeezing_the_split_axis_is_named() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 1], dtype=DataType.Float)
        fd.add_output(fd.ops.squeeze(x, [1]))
        x.set_device_mesh(DeviceMesh([0]))
        x.axis(1).parallelize(ParallelType.mesh_x)
    with pytest.raises(ShardingError, match=r"fusion.squeeze.*drops axis 1"):
        plan_sharding(fd.fusion)


def test_an_extent_from_another_mesh_is_named() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4], dtype=DataType.Float)
        y = fd.define_tensor([4], dtype=DataType.Float)
        fd.add_output(fd.ops.broadcast_in_dim(y, [x.size(0), 4], [1]))
        fd.add_output(fd.ops.exp(x))
        x.set_device_mesh(DeviceMesh([0]))
        y.set_device_mesh(DeviceMesh([1]))
    with pytest.raises(ShardingError, match=r"broadcast_in_dim.*meshes \[0\] and \[1\]"):
        plan_sharding(fd.fusion)


def test_one_gpu_views_of_a_sharded_fusion_are_refused() -> None:
    """profile=True and compile would run the global fusion on one device's pieces."""
    fd = rms_norm(2, 8)
    for call in (
        lambda: fd.execute([_array((3, 4)), _array((4,))], profile=True),
        lambda: fd.compile([_array((3, 4)), _array((4,))], arch="sm_90"),
    ):
        with pytest.raises(DefinitionError, match=r"places its tensors on devices.*profile=True"):
            call()


class _CudaLike(np.ndarray):
    """A numpy array that says it is on a GPU (as a torch CUDA tensor does)."""

    is_cuda = True


def test_a_run_of_several_processes_takes_cuda_tensors_and_any_scalars() -> None:
    mesh = DeviceMesh(range(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 8], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        fd.add_output(fd.ops.mul(x, s))
        x.set_device_mesh(mesh)
        x.axis(1).parallelize(ParallelType.mesh_x)
    piece = _array((3, 4))

    def run(comm: Any) -> Any:  # (the fusion communicates nothing: rank 1 has no part here)
        if comm.rank == 1:
            return None
        fd._multidevice = rank_executor(  # pyright: ignore[reportPrivateUsage]
            fd.fusion, comm, ReferenceRunner(), cuda_tensors=True
        )
        with pytest.raises(InputError, match=r"input #0 \(%t0\) on rank 0 is a ndarray; a run"):
            fd.execute([piece, np.float32(2.0)])
        return fd.execute([piece.view(_CudaLike), np.float32(2.0)])[0]

    (got, _) = SimulatedWorld(2).run(run)
    np.testing.assert_allclose(got, piece * 2.0)
