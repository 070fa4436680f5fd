"""The communications of a multi-GPU run, behind one small interface.

A multi-GPU fusion runs one process per GPU, and each process runs its own host program: fusion
runs on its GPU, and communications (`host.allreduce`, `host.reduce_scatter`, `host.allgather`,
`host.broadcast`, `host.send`, `host.recv`) with the other ranks. The executor that runs such a
program calls a `Communicator` for each communication and waits on the `Work` it returns, so it
never touches NCCL or torch.distributed itself, and it can be tested on a CPU:

- `TorchCommunicator` is the real one: torch.distributed with ProcessGroupNCCL, one process per
  GPU, started by `fuser-launch` (or torchrun, or mpirun).
- `fuser.runtime.simulated_world.SimulatedWorld` runs `n` ranks as threads of one process over
  numpy arrays, with the same checks and the same errors (this module's helpers), so that the
  executor's tests run without a GPU.

Every error a user's program or launch can cause is a `CommunicationError` that names the rank,
the communication and the cause. NVLink multicast (NVLS) stays off in every process that starts
NCCL (`MULTICAST_OFF`): the machines fuser runs on require it.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple, Protocol

from fuser.errors import CommunicationError

REDUCTIONS = ("sum", "prod", "max", "min")
"""The reductions `allreduce` and `reduce_scatter` take."""

MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
"""Set (never defaulted) in every process that may start NCCL: NVLink multicast stays off."""

DEFAULT_TIMEOUT_S = 300.0
"""A communication's timeout when neither the caller nor `FUSER_COMM_TIMEOUT` gives one."""


def turn_off_multicast(environ: MutableMapping[str, str]) -> None:
    """Force `MULTICAST_OFF` into an environment (overriding what the user set)."""
    environ.update(MULTICAST_OFF)


# --------------------------------------------------------------------------------------------
# The interface


class Work(Protocol):
    """A communication in flight."""

    def wait(self, stream: int | None = None) -> None:
        """Make CUDA stream `stream` (a raw CUstream handle; None: the current torch stream)
        wait for the communication, without blocking the host."""
        ...


class Communicator(Protocol):
    """One rank's view of the ranks of a run.

    Every communication is asynchronous and returns a `Work`. `mesh` lists the global ranks that
    take part, in order (the caller is one of them); `stream` is the CUDA stream whose earlier
    work the communication follows (None: the current torch stream). Results are valid on a
    stream only after `Work.wait` on it.
    """

    rank: int
    size: int
    local_rank: int

    def allreduce(
        self, tensors: list[Any], kind: str, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        """Reduce each tensor in place over the mesh (`kind` in `REDUCTIONS`); several tensors
        are one group."""
        ...

    def reduce_scatter(
        self,
        input: Any,
        output: Any,
        kind: str,
        axis: int,
        mesh: tuple[int, ...],
        stream: int | None = None,
    ) -> Work:
        """`output` = block `mesh.index(rank)` of `len(mesh)` equal blocks along `axis` of the
        reduction of every rank's `input`."""
        ...

    def allgather(
        self, input: Any, output: Any, axis: int, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        """`output` = every mesh rank's `input` concatenated along `axis`, in mesh order."""
        ...

    def broadcast(
        self, tensor: Any, root: int, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        """The root's `tensor` overwrites every other mesh rank's `tensor`."""
        ...

    def send(self, tensor: Any, peer: int, stream: int | None = None) -> Work:
        """Send `tensor` to rank `peer` (matched, in order, by its `recv` from this rank)."""
        ...

    def recv(self, tensor: Any, peer: int, stream: int | None = None) -> Work:
        """Receive into `tensor` what rank `peer` sends to this rank."""
        ...

    def barrier(self) -> None:
        """Block the host until every rank has reached its barrier."""
        ...


# --------------------------------------------------------------------------------------------
# Checks both communicators make (one wording for both)


def _ranks_text(ranks: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, ranks)) + "]"


def _tensor_text(dtype: object, shape: Sequence[int]) -> str:
    """`float32[2, 3]` for a numpy or torch dtype and a shape."""
    return f"{str(dtype).removeprefix('torch.')}{_ranks_text(list(shape))}"


def _seconds(s: float) -> str:
    return f"{s:g} s"


@dataclass(frozen=True)
class _Site:
    """A communication as one rank issues it, for its errors: `rank 0: allreduce on mesh [0, 1]:
    <cause>`."""

    rank: int
    text: str

    @staticmethod
    def of(rank: int, op: str, mesh: Sequence[int]) -> _Site:
        return _Site(rank, f"{op} on mesh {_ranks_text(mesh)}")

    def error(self, cause: str) -> CommunicationError:
        return CommunicationError(f"rank {self.rank}: {self.text}: {cause}")


def _check_mesh(site: _Site, mesh: Sequence[int], size: int) -> None:
    if not mesh or len(set(mesh)) != len(mesh) or any(not 0 <= r < size for r in mesh):
        raise site.error(f"a mesh lists distinct ranks of 0..{size - 1}")
    if site.rank not in mesh:
        raise site.error(f"rank {site.rank} is not in the mesh")


def _check_peer(site: _Site, peer: int, size: int) -> None:
    if not 0 <= peer < size or peer == site.rank:
        raise site.error(f"the peer must be another rank of 0..{size - 1}")


def _check_kind(site: _Site, kind: str) -> None:
    if kind not in REDUCTIONS:
        raise site.error(f"unknown reduction {kind!r} (expected one of {', '.join(REDUCTIONS)})")


def _axis(site: _Site, axis: int, shape: Sequence[int]) -> int:
    """`axis` of a tensor of `shape`, counted from 0 (a negative axis counts from the end)."""
    if not -len(shape) <= axis < len(shape):
        raise site.error(f"axis {axis} is out of range for a tensor of rank {len(shape)}")
    return axis % len(shape)


def _scattered_shape(site: _Site, shape: Sequence[int], axis: int, parts: int) -> tuple[int, ...]:
    """The shape of one of `parts` equal blocks along `axis`."""
    if shape[axis] % parts:
        raise site.error(f"axis {axis} of extent {shape[axis]} does not split into {parts} blocks")
    return (*shape[:axis], shape[axis] // parts, *shape[axis + 1 :])


def _gathered_shape(shape: Sequence[int], axis: int, parts: int) -> tuple[int, ...]:
    return (*shape[:axis], shape[axis] * parts, *shape[axis + 1 :])


def _check_output(site: _Site, output: Any, dtype: object, shape: Sequence[int]) -> None:
    """`output` (numpy or torch) must have `dtype` and `shape`."""
    got, want = _tensor_text(output.dtype, output.shape), _tensor_text(dtype, shape)
    if got != want:
        raise site.error(f"the output is {got}, expected {want}")


# --------------------------------------------------------------------------------------------
# The launch environment (read without torch)


class LaunchEnvironment(NamedTuple):
    """Where this process sits in a run, as the launcher (fuser-launch, torchrun, mpirun) says."""

    rank: int
    size: int
    local_rank: int
    master_addr: str
    master_port: int


def _integer(environ: Mapping[str, str], names: Sequence[str], who: str) -> int:
    """The first of `names` that is set, as an integer."""
    for name in names:
        text = environ.get(name)
        if text is not None:
            try:
                return int(text)
            except ValueError:
                raise CommunicationError(f"{who}: {name}={text!r} is not an integer") from None
    also = f" (nor {', '.join(names[1:])})" if len(names) > 1 else ""
    raise CommunicationError(
        f"{who}: {names[0]} is not set{also}: start the program with fuser-launch, torchrun or"
        " mpirun"
    )


def launch_environment(environ: Mapping[str, str]) -> LaunchEnvironment:
    """Rank, world size, local rank and rendezvous address from torchrun-style variables
    (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`), falling back to Open
    MPI's (`OMPI_COMM_WORLD_RANK`, `_SIZE`, `_LOCAL_RANK`); CommunicationError naming what is
    missing or wrong."""
    rank = _integer(environ, ("RANK", "OMPI_COMM_WORLD_RANK"), "the launch")
    who = f"rank {rank}"
    size = _integer(environ, ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"), who)
    local_rank = _integer(environ, ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"), who)
    if size < 1:
        raise CommunicationError(f"{who}: the world size is {size}, not a positive number")
    if not 0 <= rank < size:
        raise CommunicationError(f"{who}: rank {rank} is not in a world of {size} ranks")
    if not 0 <= local_rank < size:
        raise CommunicationError(
            f"{who}: local rank {local_rank} is not in a world of {size} ranks"
        )
    port = _integer(environ, ("MASTER_PORT",), who)
    if not 0 < port < 65536:
        raise CommunicationError(f"{who}: MASTER_PORT={port} is not a port number")
    return LaunchEnvironment(rank, size, local_rank, environ.get("MASTER_ADDR", "127.0.0.1"), port)


def communication_timeout(timeout_s: float | None, environ: Mapping[str, str]) -> float:
    """`timeout_s`, else `FUSER_COMM_TIMEOUT` seconds, else `DEFAULT_TIMEOUT_S`."""
    if timeout_s is None:
        text = environ.get("FUSER_COMM_TIMEOUT")
        if text is None:
            return DEFAULT_TIMEOUT_S
        try:
            timeout_s = float(text)
        except ValueError:
            raise CommunicationError(f"FUSER_COMM_TIMEOUT={text!r} is not a number") from None
    if not timeout_s > 0:
        raise CommunicationError(f"the communication timeout is {timeout_s} s, not positive")
    return timeout_s


# --------------------------------------------------------------------------------------------
# torch.distributed with NCCL

_TORCH_ERRORS = (RuntimeError, ValueError, TypeError)
"""What torch.distributed raises for a failed call (DistBackendError, DistStoreError and
DistNetworkError are RuntimeErrors); translated into CommunicationError."""

_TORCH_FAIL_FAST = {
    # on a timeout or a failed peer, the watchdog aborts NCCL and ends the process (SIGABRT,
    # with NCCL's error on stderr; fuser-launch then stops the other ranks) instead of hanging
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    # ... after 2 s for the debug dumps of the other ranks, not torch's 60 s
    "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": "2000",
}
"""Defaults (a user's own setting wins) for the processes that initialize torch.distributed."""

_instance_lock = threading.Lock()
_instance: TorchCommunicator | None = None


def _import_torch(who: str) -> tuple[Any, Any]:
    try:
        import torch  # pyright: ignore[reportMissingImports]  (optional; not in the test venv)
        import torch.distributed as dist  # pyright: ignore[reportMissingImports]
    except ImportError as e:
        raise CommunicationError(f"{who}: a multi-GPU run needs torch: {e}") from None
    if not dist.is_available() or not dist.is_nccl_available():
        raise CommunicationError(f"{who}: this torch has no torch.distributed with NCCL")
    return torch, dist


class _TorchWork:
    """A torch Work (or several, one group), plus the copy that finishes the communication where
    NCCL wrote a contiguous temporary: `finish` runs once, on the first stream that waits (so
    the issuing stream never waits for NCCL), reading `temporaries`; later waits wait for it."""

    def __init__(
        self,
        comm: TorchCommunicator,
        site: _Site,
        works: list[Any],
        finish: Callable[[], object] | None = None,
        temporaries: Sequence[Any] = (),
    ) -> None:
        self._comm = comm
        self._site = site
        self._works = works
        self._finish = finish
        self._temporaries = list(temporaries)
        self._finished: Any = None  # the event recorded after `finish`

    def wait(self, stream: int | None = None) -> None:
        torch = self._comm.torch
        try:
            with self._comm.on_stream(stream):
                current = torch.cuda.current_stream()
                if self._finished is not None:
                    current.wait_event(self._finished)
                    return
                for work in self._works:
                    work.wait()  # ProcessGroupNCCL: the current stream waits; the host does not
                if self._finish is not None:
                    for t in self._temporaries:
                        t.record_stream(current)  # read here, on another stream than NCCL's
                    self._finish()
                    self._finished = torch.cuda.Event()
                    self._finished.record(current)
                    self._works = self._temporaries = []
        except _TORCH_ERRORS as e:
            raise self._site.error(f"failed: {e}") from e


def _exit_at_once(report: Callable[..., object]) -> Callable[..., None]:
    """An excepthook for a rank of a multi-GPU run: the uncaught error is reported as before,
    then the process ends at once, without the orderly NCCL teardown of `shutdown`, which can
    wait for the peers that are themselves waiting for this rank's next collective. The
    launcher (fuser-launch, torchrun) sees the rank fail and stops the others."""

    def hook(*exc_info: Any) -> None:
        report(*exc_info)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    return hook


class TorchCommunicator:
    """A Communicator on torch.distributed with ProcessGroupNCCL: tensors are CUDA torch
    tensors of this process's GPU (`cuda:<local_rank>`), any strides.

    A mesh of every rank uses the default group; any other mesh a group of its own
    (`new_group(use_local_synchronization=True)`, created by its members only, cached by its
    set of ranks). The default group is not bound to a device (`init_process_group` without
    `device_id`): with one, torch 2.11 creates a sub-group's NCCL communicator with
    `ncclCommSplit`, a collective over *every* rank, which ranks outside the mesh never join
    (their programs never reach its communications), so they would hang.

    NCCL works on contiguous buffers, and a group's ranks are its mesh's ranks sorted. Where a
    tensor is not contiguous (after moving `axis` outermost), or the mesh is not sorted, NCCL
    reads a contiguous copy made on the issuing stream and writes a temporary that the first
    `wait` copies into place, on its own stream; otherwise NCCL reads and writes the tensors.
    """

    def __init__(
        self, rank: int, size: int, local_rank: int, timeout_s: float, owns_group: bool
    ) -> None:
        self.torch, self.dist = _import_torch(f"rank {rank}")
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.timeout_s = timeout_s
        self.device = self.torch.device("cuda", local_rank)
        self._owns_group = owns_group
        self._groups: dict[tuple[int, ...], Any] = {}
        self._ops = {
            "sum": self.dist.ReduceOp.SUM,
            "prod": self.dist.ReduceOp.PRODUCT,
            "max": self.dist.ReduceOp.MAX,
            "min": self.dist.ReduceOp.MIN,
        }

    @classmethod
    def from_environment(cls, timeout_s: float | None = None) -> TorchCommunicator:
        """The communicator of this process, from the launcher's variables (see
        `launch_environment`); the first call joins the rendezvous, later calls return the same
        communicator (until `shutdown`). `timeout_s` (default `FUSER_COMM_TIMEOUT`, else 300)
        bounds the rendezvous and every communication: a communication that times out or
        whose peer died ends the process with NCCL's error instead of hanging it."""
        global _instance
        with _instance_lock:
            if _instance is not None and _instance.dist.is_initialized():
                return _instance
            env = launch_environment(os.environ)
            timeout = communication_timeout(timeout_s, os.environ)
            who = f"rank {env.rank}"
            turn_off_multicast(os.environ)
            for name, value in _TORCH_FAIL_FAST.items():
                os.environ.setdefault(name, value)
            torch, dist = _import_torch(who)
            gpus = torch.cuda.device_count()
            if env.local_rank >= gpus:
                raise CommunicationError(
                    f"{who}: LOCAL_RANK={env.local_rank} but this process sees {gpus} GPU(s)"
                    f" (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})"
                )
            torch.cuda.set_device(env.local_rank)
            owns = not dist.is_initialized()
            if owns:
                os.environ["MASTER_ADDR"] = env.master_addr
                os.environ["MASTER_PORT"] = str(env.master_port)
                try:
                    dist.init_process_group(
                        "nccl",
                        init_method="env://",
                        rank=env.rank,
                        world_size=env.size,
                        timeout=timedelta(seconds=timeout),
                    )
                except (*_TORCH_ERRORS, TimeoutError, OSError) as e:
                    raise CommunicationError(
                        f"{who}: the rendezvous of {env.size} ranks at"
                        f" {env.master_addr}:{env.master_port} failed (timeout"
                        f" {_seconds(timeout)}): {e}"
                    ) from e
            elif dist.get_backend() != "nccl" or (dist.get_rank(), dist.get_world_size()) != (
                env.rank,
                env.size,
            ):
                raise CommunicationError(
                    f"{who}: torch.distributed is already initialized as rank {dist.get_rank()}"
                    f" of {dist.get_world_size()} with {dist.get_backend()}, but the launch says"
                    f" rank {env.rank} of {env.size} with nccl"
                )
            comm = cls(env.rank, env.size, env.local_rank, timeout, owns)
            if owns:
                atexit.register(comm.shutdown)
                sys.excepthook = _exit_at_once(sys.excepthook)
            try:
                comm.barrier()  # connects NCCL now: a failure shows here, not mid-program
            except CommunicationError:
                comm.shutdown()
                raise
            _instance = comm
            return comm

    def shutdown(self) -> None:
        """Destroy the process group this communicator created (idempotent)."""
        global _instance
        if _instance is self:
            _instance = None
        self._groups.clear()
        if self._owns_group:
            self._owns_group = False  # (a later communicator's group is not this one's)
            if self.dist.is_initialized():
                self.dist.destroy_process_group()

    # -- helpers

    def on_stream(self, stream: int | None) -> AbstractContextManager[Any]:
        """Make raw CUDA stream `stream` torch's current stream (None: leave it)."""
        if stream is None:
            return nullcontext()
        return self.torch.cuda.stream(self.torch.cuda.ExternalStream(stream, device=self.device))

    def _group(self, mesh: tuple[int, ...]) -> Any:
        """The process group of a mesh (None: the default group). Group ranks are the mesh's
        ranks sorted (torch sorts them)."""
        key = tuple(sorted(mesh))
        if key == tuple(range(self.size)):
            return None
        group = self._groups.get(key)
        if group is None:
            group = self.dist.new_group(
                list(key), timeout=timedelta(seconds=self.timeout_s), use_local_synchronization=True
            )
            self._groups[key] = group
        return group

    def _issue(self, site: _Site, stream: int | None, issue: Callable[[], _TorchWork]) -> Work:
        try:
            with self.on_stream(stream):
                return issue()
        except _TORCH_ERRORS as e:
            raise site.error(f"failed: {e}") from e

    def _buffer(self, t: Any, values: bool) -> tuple[Any, Callable[[], object] | None]:
        """A contiguous tensor NCCL may write for `t` (`t` itself where it is contiguous; else a
        temporary holding `t`'s values if `values`) and the copy back into `t` (or None)."""
        if t.is_contiguous():
            return t, None
        c = t.contiguous() if values else self.torch.empty(t.shape, dtype=t.dtype, device=t.device)
        return c, lambda: t.copy_(c)

    # -- the communications

    def allreduce(
        self, tensors: list[Any], kind: str, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        site = _Site.of(self.rank, "allreduce", mesh)
        _check_mesh(site, mesh, self.size)
        _check_kind(site, kind)

        def issue() -> _TorchWork:
            group = self._group(mesh)
            pairs = [self._buffer(t, values=True) for t in tensors]
            op = self._ops[kind]
            if len(pairs) == 1:
                works = [self.dist.all_reduce(pairs[0][0], op=op, group=group, async_op=True)]
            else:  # one NCCL group (ProcessGroupNCCL's allreduce_coalesced)
                c10d = self.dist.distributed_c10d
                with c10d._coalescing_manager(group=group, async_ops=True) as cm:
                    for buffer, _ in pairs:
                        self.dist.all_reduce(buffer, op=op, group=group)
                works = list(cm.works)
            copies = [(buffer, copy) for buffer, copy in pairs if copy is not None]
            if not copies:
                return _TorchWork(self, site, works)
            return _TorchWork(
                self,
                site,
                works,
                lambda: [copy() for _, copy in copies],
                [buffer for buffer, _ in copies],
            )

        return self._issue(site, stream, issue)

    def reduce_scatter(
        self,
        input: Any,
        output: Any,
        kind: str,
        axis: int,
        mesh: tuple[int, ...],
        stream: int | None = None,
    ) -> Work:
        site = _Site.of(self.rank, "reduce_scatter", mesh)
        _check_mesh(site, mesh, self.size)
        _check_kind(site, kind)
        axis = _axis(site, axis, input.shape)
        parts = len(mesh)
        _check_output(site, output, input.dtype, _scattered_shape(site, input.shape, axis, parts))

        def issue() -> _TorchWork:
            group = self._group(mesh)
            order = sorted(mesh)
            moved = input.movedim(axis, 0)  # NCCL scatters the outermost axis
            block = moved.shape[0] // parts
            if order == list(mesh):
                source = moved.contiguous()
            else:  # NCCL's block j goes to group rank j, the j-th rank of the sorted mesh
                source = self.torch.cat(
                    [moved.narrow(0, mesh.index(r) * block, block) for r in order]
                )
            target, copy = self._buffer(output.movedim(axis, 0), values=False)
            work = self.dist.reduce_scatter_tensor(
                target, source, op=self._ops[kind], group=group, async_op=True
            )
            return _TorchWork(self, site, [work], copy, [target])

        return self._issue(site, stream, issue)

    def allgather(
        self, input: Any, output: Any, axis: int, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        site = _Site.of(self.rank, "allgather", mesh)
        _check_mesh(site, mesh, self.size)
        axis = _axis(site, axis, input.shape)
        parts = len(mesh)
        _check_output(site, output, input.dtype, _gathered_shape(input.shape, axis, parts))

        def issue() -> _TorchWork:
            group = self._group(mesh)
            order = sorted(mesh)
            source = input.movedim(axis, 0).contiguous()  # NCCL gathers the outermost axis
            out = output.movedim(axis, 0)
            if order == list(mesh):
                target, copy = self._buffer(out, values=False)
                work = self.dist.all_gather_into_tensor(target, source, group=group, async_op=True)
                return _TorchWork(self, site, [work], copy, [target])
            # group rank j (the j-th rank of the sorted mesh) lands in block j of the target
            target = self.torch.empty(out.shape, dtype=out.dtype, device=out.device)
            work = self.dist.all_gather_into_tensor(target, source, group=group, async_op=True)
            block = source.shape[0]

            def reorder() -> None:
                for i, r in enumerate(mesh):
                    j = order.index(r)
                    out.narrow(0, i * block, block).copy_(target.narrow(0, j * block, block))

            return _TorchWork(self, site, [work], reorder, [target])

        return self._issue(site, stream, issue)

    def broadcast(
        self, tensor: Any, root: int, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        site = _Site.of(self.rank, "broadcast", mesh)
        _check_mesh(site, mesh, self.size)
        if root not in mesh:
            raise site.error(f"the root {root} is not in the mesh")

        def issue() -> _TorchWork:
            group = self._group(mesh)
            buffer, copy = self._buffer(tensor, values=True)
            work = self.dist.broadcast(buffer, src=root, group=group, async_op=True)
            return _TorchWork(self, site, [work], copy, [buffer])

        return self._issue(site, stream, issue)

    def send(self, tensor: Any, peer: int, stream: int | None = None) -> Work:
        site = _Site(self.rank, f"send to rank {peer}")
        _check_peer(site, peer, self.size)

        def issue() -> _TorchWork:
            return _TorchWork(self, site, [self.dist.isend(tensor.contiguous(), dst=peer)])

        return self._issue(site, stream, issue)

    def recv(self, tensor: Any, peer: int, stream: int | None = None) -> Work:
        site = _Site(self.rank, f"recv from rank {peer}")
        _check_peer(site, peer, self.size)

        def issue() -> _TorchWork:
            buffer, copy = self._buffer(tensor, values=False)
            return _TorchWork(self, site, [self.dist.irecv(buffer, src=peer)], copy, [buffer])

        return self._issue(site, stream, issue)

    def barrier(self) -> None:
        site = _Site.of(self.rank, "barrier", range(self.size))
        try:
            self.dist.barrier(device_ids=[self.local_rank])
        except _TORCH_ERRORS as e:
            raise site.error(f"failed: {e}") from e
