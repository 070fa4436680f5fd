"""Multi-GPU fusions in nvFuser's spelling: `DeviceMesh`, `Communicator`, `shard_tensor`.

A fusion runs on several GPUs when its tensors say where they live, as nvFuser's multidevice
API says it, inside the `with FusionDefinition() as fd:` block:

    mesh = multidevice.DeviceMesh(range(2))        # or torch.arange(2)
    x.set_device_mesh(mesh)
    x.axis(1).parallelize(ParallelType.mesh_x)      # x is split along dim 1 over the mesh

(`x.outer_split(1, 2)` before `parallelize`, nvFuser's way of naming the split, is taken when the
factor is the mesh's size.) A tensor given a mesh and no axis is replicated on it; a tensor
given nothing is placed from its operands (`fuser-shard`). Each process runs `fd.execute` with
its own pieces of the inputs (`shard_tensor`) and gets its pieces of the outputs back; the
processes are started by `fuser-launch -n N script.py` or `torchrun`, one per GPU, and meet
through `Communicator.instance()`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fuser.errors import CommunicationError, DefinitionError, InputError

if TYPE_CHECKING:
    from fuser.dialects.fusion import FusionOp
    from fuser.runtime.multidevice import MultiDeviceExecutor, StageRunner

__all__ = ["Communicator", "DeviceMesh", "rank_executor", "shard_tensor"]


class DeviceMesh:
    """The devices (global ranks, one process per GPU) a tensor lives on, in order: nvFuser's
    `DeviceMesh` (one-dimensional)."""

    def __init__(self, devices: Iterable[int] | Any):
        tolist = getattr(devices, "tolist", None)  # a torch tensor or numpy array of ranks
        if tolist is not None:
            devices = tolist()
        try:
            ranks = [int(d) for d in devices]
            ok = all(float(d) == r for d, r in zip(devices, ranks, strict=True))
        except (TypeError, ValueError):
            ok, ranks = False, []
        if not ok or isinstance(devices, str) or not ranks:
            raise DefinitionError(
                f"DeviceMesh: expected a non-empty sequence of device ranks, got {devices!r}"
            )
        from fuser.dialects.fusion import mesh_error  # (the rules of #fusion.sharding's mesh)

        if (error := mesh_error(ranks)) is not None:
            raise DefinitionError(f"DeviceMesh: {error}")
        self.devices: tuple[int, ...] = tuple(ranks)

    @property
    def size(self) -> int:
        """How many devices the mesh has."""
        return len(self.devices)

    @property
    def shape(self) -> tuple[int]:
        return (len(self.devices),)

    def index(self, rank: int) -> int:
        """The position of `rank` in the mesh (which block of a split tensor it holds)."""
        if rank not in self.devices:
            raise InputError(f"rank {rank} is not in {self}")
        return self.devices.index(rank)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceMesh) and other.devices == self.devices

    def __hash__(self) -> int:
        return hash(self.devices)

    def __repr__(self) -> str:
        return f"DeviceMesh([{', '.join(map(str, self.devices))}])"


class Communicator:
    """This process's place among the processes of a multi-GPU run (nvFuser's
    `multidevice.Communicator.instance()`): rank, size, local rank, barrier.

    Made on first use from the launcher's environment (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, as
    `fuser-launch` and `torchrun` set them), over torch.distributed's NCCL process group. A
    process started without them is rank 0 of a world of 1 (a mesh of one device needs no
    communication)."""

    _instance: Communicator | None = None

    def __init__(self, backend: Any | None):
        self._backend = backend

    @classmethod
    def instance(cls) -> Communicator:
        if cls._instance is None:
            if "WORLD_SIZE" in os.environ or "OMPI_COMM_WORLD_SIZE" in os.environ:
                from fuser.runtime.communicator import TorchCommunicator

                cls._instance = Communicator(TorchCommunicator.from_environment())
            else:
                cls._instance = Communicator(None)
        return cls._instance

    @property
    def backend(self) -> Any:
        """The communicator collectives run through (`fuser.runtime.communicator`), or None in a
        world of one process."""
        return self._backend

    def size(self) -> int:
        return 1 if self._backend is None else self._backend.size

    def rank(self) -> int:
        return 0 if self._backend is None else self._backend.rank

    def local_rank(self) -> int:
        return 0 if self._backend is None else self._backend.local_rank

    def local_size(self) -> int:
        return int(os.environ.get("LOCAL_WORLD_SIZE", self.size()))

    def barrier(self) -> None:
        if self._backend is not None:
            self._backend.barrier()


def shard_tensor(tensor: Any, dim: int, mesh: DeviceMesh, rank: int | None = None) -> Any:
    """`rank`'s block (default: this process's) of `tensor` split evenly along `dim` over `mesh`:
    the piece of a global input that `fd.execute` takes on that rank. A torch tensor comes back
    on this process's GPU; a numpy array as a numpy array."""
    if rank is None:
        rank = Communicator.instance().rank()
    shape = tuple(tensor.shape)
    if not -len(shape) <= dim < len(shape):
        raise InputError(f"shard_tensor: dim {dim} is out of range for shape {list(shape)}")
    dim %= len(shape)
    n = mesh.size
    if shape[dim] % n:
        raise InputError(
            f"shard_tensor: dim {dim} of extent {shape[dim]} does not split evenly over {mesh}"
        )
    block = shape[dim] // n
    i = mesh.index(rank)
    index = tuple(
        slice(i * block, (i + 1) * block) if d == dim else slice(None) for d in range(len(shape))
    )
    piece = tensor[index]
    if hasattr(piece, "contiguous"):  # torch
        import torch  # pyright: ignore[reportMissingImports]  (present wherever torch tensors are)

        device = torch.device("cuda", Communicator.instance().local_rank())
        return piece.contiguous().to(device)
    return piece.copy()


def rank_executor(
    fusion: FusionOp, communicator: Any | None, runner: StageRunner, cuda_tensors: bool = False
) -> MultiDeviceExecutor:
    """The executor of this process's program of the sharded `fusion` (`fuser-shard`), for the
    rank and world of `communicator` (None: rank 0 of a world of one; `cuda_tensors`: its
    tensor inputs must be torch CUDA tensors); raises CommunicationError when the fusion's
    meshes name a device the run does not have."""
    rank, world = (0, 1) if communicator is None else (communicator.rank, communicator.size)
    from fuser.dialects.fusion import input_shardings, sharding
    from fuser.runtime.multidevice import MultiDeviceExecutor
    from fuser.transforms.shard import rank_parts, shard_for_rank

    meshes = [s.devices for s in input_shardings(fusion) or ()]
    meshes += [s.devices for op in fusion.body.walk() if (s := sharding(op)) is not None]
    devices = sorted({d for m in meshes for d in m})
    if devices and devices[-1] >= world:
        raise CommunicationError(
            f"rank {rank}: fusion @{fusion.sym_name.data} places tensors on devices {devices}, "
            f"and the run has {world} process(es); start one per device (fuser-launch -n "
            f"{devices[-1] + 1} script.py, or torchrun)"
        )
    fusions, program = rank_parts(shard_for_rank(fusion, rank))
    return MultiDeviceExecutor(program, fusions, communicator, runner, cuda_tensors)
