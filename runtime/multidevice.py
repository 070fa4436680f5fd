"""Running a sharded fusion: one rank's program, its local fusions and its communications.

`fuser-shard` turns a sharded fusion into each rank's `host.program` of `host.run_fusion`s
(local fusions, each compiled and run by the ordinary pipeline) and communications
(`host.allreduce`, ..., `host.wait`). `MultiDeviceExecutor` runs one rank's program, as
nvFuser's `MultiDeviceExecutor` runs its host IR: op by op, in order, each op compiled once into
a step over a register file. It is not on the single-GPU path.

- **Stages** run through a `StageRunner`: `DeviceRunner` compiles each local fusion with its own
  `FusionCompiler` (signature cache, parallel compile, CUDA graphs) and runs it on torch tensors
  on the current stream; `ReferenceRunner` evaluates it with numpy (`fuser.runtime.reference`),
  for a simulated world on the CPU.
- **Communications** go to the process's communicator (`fuser.runtime.communicator`): issued
  after the work already on the current stream and not waited for by the host; `host.wait`
  makes the current stream wait for one (torch's NCCL work: an event). `host.allreduce` reduces
  in place into its operands (stage outputs nothing else reads); the other collectives write
  into tensors allocated like the stage outputs. A collective over a mesh of one device is the
  identity and needs no communicator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from fuser.dialects import fusion as fu
from fuser.dialects import host
from fuser.errors import CommunicationError, InputError
from fuser.runtime.dtypes import numpy_dtype

__all__ = ["DeviceRunner", "MultiDeviceExecutor", "ReferenceRunner", "StageRunner"]


class StageRunner(Protocol):
    """Runs the local fusions of a rank's program and makes the tensors communications write."""

    def run(self, fusion: fu.FusionOp, inputs: Sequence[Any]) -> list[Any]: ...

    def empty(self, shape: Sequence[int], element_type: Attribute) -> Any: ...


class ReferenceRunner:
    """Stages evaluated with numpy (`fuser.runtime.reference`), for a simulated world."""

    def run(self, fusion: fu.FusionOp, inputs: Sequence[Any]) -> list[Any]:
        from fuser.runtime.reference import evaluate

        return evaluate(fusion, inputs)

    def empty(self, shape: Sequence[int], element_type: Attribute) -> Any:
        return np.empty(tuple(shape), numpy_dtype(element_type))


class DeviceRunner:
    """Stages compiled and run on this process's GPU, on torch tensors: `compiler(fusion)` makes
    each stage's compiler (a `fuser.compiler.FusionCompiler`) on its first run."""

    def __init__(self, compiler: Callable[[fu.FusionOp], Any]):
        self._make = compiler
        self._compilers: dict[fu.FusionOp, Any] = {}

    def run(self, fusion: fu.FusionOp, inputs: Sequence[Any]) -> list[Any]:
        compiler = self._compilers.get(fusion)
        if compiler is None:
            compiler = self._compilers[fusion] = self._make(fusion)
        return compiler.execute(inputs)

    def empty(self, shape: Sequence[int], element_type: Attribute) -> Any:
        import torch  # pyright: ignore[reportMissingImports]  (a GPU run's stages are torch's)

        dtype = getattr(torch, numpy_dtype(element_type).name)
        return torch.empty(tuple(shape), dtype=dtype, device=torch.cuda.current_device())


def _describe(op: host.ProgramOp) -> str:
    return f"@{op.sym_name.data} (rank {op.attributes.get('fuser.rank')})"


Step = Callable[[list[Any]], None]
"""One op of a rank's program, compiled: it reads and writes the call's registers."""


class MultiDeviceExecutor:
    """Runs one rank's program of a sharded fusion (see the module docstring): `program` and
    `fusions` as `fuser-shard` makes them for that rank.

    `communicator` is the process's `fuser.runtime.communicator.Communicator` (None in a world
    of one process, where every mesh is one device). The program is compiled once into a list
    of steps over a register file (as the host evaluator compiles a `host.program`), so a call
    walks no IR."""

    def __init__(
        self,
        program: host.ProgramOp,
        fusions: Sequence[fu.FusionOp],
        communicator: Any | None,
        runner: StageRunner,
        cuda_tensors: bool = False,
    ):
        rank = program.attributes.get("fuser.rank")
        self.rank = rank.value.data if isinstance(rank, IntegerAttr) else 0
        self.program = program
        self.fusions = {f.sym_name.data: f for f in fusions}
        self.communicator = communicator
        self.runner = runner
        self.cuda_tensors = cuda_tensors
        """Whether tensor inputs must be torch CUDA tensors (NCCL's, in a run of processes)."""
        self._registers: dict[SSAValue, int] = {}
        args = program.body.block.args
        for a in args:
            self._register(a)
        ops = list(program.body.block.ops)
        used = {o for op in ops for o in op.operands}
        self._checks = [
            (i, a, tuple(a.type.get_shape()))
            for i, a in enumerate(args)
            if a in used and isinstance(a.type, TensorType)
        ]
        self._steps = [self._compile(op) for op in ops if not isinstance(op, host.ReturnOp)]
        returned = ops[-1]
        assert isinstance(returned, host.ReturnOp)
        self._results = [self._registers[v] for v in returned.values]
        self._size = len(self._registers)

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        """Runs the program on this rank's pieces of the inputs; returns its pieces of the
        outputs (an empty tensor for an output that lives on no device of this rank)."""
        n = len(self.program.body.block.args)
        if len(inputs) != n:
            raise InputError(
                f"fusion @{self.program.sym_name.data} takes {n} inputs, got {len(inputs)}"
            )
        for i, a, expected in self._checks:
            shape = getattr(inputs[i], "shape", None)
            if self.cuda_tensors and not getattr(inputs[i], "is_cuda", False):
                raise InputError(
                    f"input #{i} (%{a.name_hint}) on rank {self.rank} is a "
                    f"{type(inputs[i]).__name__}; a run of several processes takes torch CUDA "
                    "tensors (shard_tensor of a torch tensor gives this process's piece on its "
                    "GPU)"
                )
            if (
                shape is None
                or len(shape) != len(expected)
                or any(e >= 0 and e != g for e, g in zip(expected, shape, strict=True))
            ):
                _input_error(i, a, expected, shape, self.rank)
        r: list[Any] = [None] * self._size
        r[:n] = inputs
        for step in self._steps:
            step(r)
        return [r[i] for i in self._results]

    def _register(self, value: SSAValue) -> int:
        return self._registers.setdefault(value, len(self._registers))

    def _compile(self, op: Operation) -> Step:
        """`op` as a step (a closure over its registers and what it calls)."""
        reg = self._registers.__getitem__
        if isinstance(op, host.RunFusionOp):
            fusion = self.fusions[op.callee.root_reference.data]
            ins = [reg(v) for v in op.args]
            outs = [self._register(v) for v in op.results]
            run = self.runner.run

            def run_fusion(r: list[Any]) -> None:
                for i, value in zip(outs, run(fusion, [r[i] for i in ins]), strict=True):
                    r[i] = value

            return run_fusion
        if isinstance(op, host.WaitOp):
            w = reg(op.work)

            def wait(r: list[Any]) -> None:
                if r[w] is not None:
                    r[w].wait(None)
                    r[w] = None

            return wait
        if isinstance(op, host.AllocateOp):
            t = op.results[0].type
            assert isinstance(t, TensorType)
            out, shape, element = self._register(op.results[0]), t.get_shape(), t.element_type
            empty = self.runner.empty

            def allocate(r: list[Any]) -> None:
                r[out] = empty(shape, element)

            return allocate
        return self._communication(op)

    def _communication(self, op: Operation) -> Step:
        """A collective or a send or receive: issued, its work in the work's register."""
        mesh: tuple[int, ...] = getattr(op, "mesh_ranks", ())
        outs = [self._register(v) for v in op.results]  # the results, then the work
        w = outs[-1]
        if len(mesh) == 1:  # one device: the identity (its operands are its results)
            pairs = list(zip([self._registers[v] for v in op.operands], outs[:-1], strict=False))

            def identity(r: list[Any]) -> None:
                for i, o in pairs:
                    r[o] = r[i]

            return identity
        c = self.communicator
        if c is None:
            raise CommunicationError(
                f"rank {self.rank}: {op.name} in {_describe(self.program)} needs other "
                "processes, and this one runs alone (start the script with fuser-launch -n N "
                "or torchrun)"
            )
        empty = self.runner.empty
        if isinstance(op, host.AllreduceOp):
            ins, kind = [self._registers[v] for v in op.inputs], op.kind

            def allreduce(r: list[Any]) -> None:  # in place: the results are the operands
                tensors = [r[i] for i in ins]
                r[w] = c.allreduce(tensors, kind, mesh, None)
                for o, t in zip(outs, tensors, strict=False):
                    r[o] = t

            return allreduce
        if isinstance(op, host.ReduceScatterOp | host.AllgatherOp):
            i, o, axis = self._registers[op.input], outs[0], op.axis
            element = _element(op.results[0])
            parts = len(mesh)
            if isinstance(op, host.ReduceScatterOp):
                kind = op.kind

                def reduce_scatter(r: list[Any]) -> None:
                    shape = list(r[i].shape)
                    shape[axis] //= parts
                    r[o] = empty(shape, element)
                    r[w] = c.reduce_scatter(r[i], r[o], kind, axis, mesh, None)

                return reduce_scatter

            def allgather(r: list[Any]) -> None:
                shape = list(r[i].shape)
                shape[axis] *= parts
                r[o] = empty(shape, element)
                r[w] = c.allgather(r[i], r[o], axis, mesh, None)

            return allgather
        t = op.results[0].type
        if isinstance(op, host.SendOp):
            i, peer = self._registers[op.input], op.peer

            def send(r: list[Any]) -> None:  # the source stays in its register until the end
                r[w] = c.send(r[i], peer, None)

            return send
        assert isinstance(t, TensorType)
        o, shape, element = outs[0], t.get_shape(), t.element_type
        if isinstance(op, host.BroadcastOp):
            source, root = op.input, op.root
            i = None if source is None else self._registers[source]

            def broadcast(r: list[Any]) -> None:  # in place on the root, received elsewhere
                r[o] = empty(shape, element) if i is None else r[i]
                r[w] = c.broadcast(r[o], root, mesh, None)

            return broadcast
        assert isinstance(op, host.RecvOp)
        peer = op.peer

        def recv(r: list[Any]) -> None:
            r[o] = empty(shape, element)
            r[w] = c.recv(r[o], peer, None)

        return recv


def _element(value: SSAValue) -> Attribute:
    t = value.type
    assert isinstance(t, TensorType)
    return t.element_type


def _input_error(
    position: int, arg: SSAValue, expected: Sequence[int], shape: Any, rank: int
) -> None:
    """An input that is not the rank's piece: its rank or a static extent differs."""
    want = "x".join("?" if e < 0 else str(e) for e in expected)
    got = "no tensor" if shape is None else "x".join(map(str, shape)) or "a scalar"
    raise InputError(
        f"input #{position} (%{arg.name_hint}) on rank {rank} must be this rank's piece, of "
        f"shape {want}; got {got} (fuser.multidevice.shard_tensor gives it)"
    )
