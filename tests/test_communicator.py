"""The communicators (`fuser.runtime.communicator`) and the launcher (`fuser-launch`).

The simulated world is checked against numpy on 1 to 4 ranks, with its refusals and its failure
handling (a failed rank fails the others fast; a missing one times out). The launcher is run on
small scripts. `TorchCommunicator` is checked here where it needs no torch (reading the launch
environment); `test_torch_communicator_on_two_gpus` runs it through `fuser-launch -n 2` where
torch sees two GPUs.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fuser.errors import CommunicationError
from fuser.runtime.communicator import (
    DEFAULT_TIMEOUT_S,
    MULTICAST_OFF,
    Communicator,
    LaunchEnvironment,
    TorchCommunicator,
    communication_timeout,
    launch_environment,
)
from fuser.runtime.simulated_world import SimulatedCommunicator, SimulatedWorld

RANKS = [1, 2, 3, 4]
UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def reduced(kind: str, arrays: list[np.ndarray]) -> np.ndarray:
    """The reduction in the arrays' dtype, in the given order."""
    result = arrays[0].copy()
    for a in arrays[1:]:
        result = UFUNCS[kind](result, a).astype(result.dtype)
    return result


def small_ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Values whose sums and products over 4 ranks are exact in every dtype used here."""
    return rng.integers(-3, 4, size=shape).astype(dtype)


def run(world: SimulatedWorld, fn: Callable[[SimulatedCommunicator], Any]) -> list[Any]:
    return world.run(fn)


# --------------------------------------------------------------------------------------------
# The simulated world: every collective against numpy


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_allreduce(n: int, kind: str, rng: np.random.Generator) -> None:
    shapes = [(), (0,), (1,), (3, 5), (2, 0, 3)]
    dtypes = [np.float32, np.int32, np.float32, np.int32, np.float64]
    inputs = [
        [small_ints(rng, s, d) for s, d in zip(shapes, dtypes, strict=True)] for _ in range(n)
    ]
    mesh = tuple(reversed(range(n)))

    def program(c: SimulatedCommunicator) -> list[np.ndarray]:
        mine = [a.copy() for a in inputs[c.rank]]
        c.allreduce(mine, kind, mesh).wait()
        return mine

    for result in run(SimulatedWorld(n), program):
        for i, got in enumerate(result):
            want = reduced(kind, [inputs[r][i] for r in mesh])
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


def test_allreduce_sums_in_mesh_order() -> None:
    """Float sums are not associative: the result is the sum in mesh order, on every rank."""
    values = np.array([1.0, 1e8, -1e8], np.float32)
    for mesh, want in [((0, 1, 2), 0.0), ((1, 2, 0), 1.0)]:

        def program(c: SimulatedCommunicator, mesh: tuple[int, ...] = mesh) -> float:
            x = np.array([values[c.rank]])
            c.allreduce([x], "sum", mesh)
            return float(x[0])

        assert run(SimulatedWorld(3), program) == [want] * 3


def test_allreduce_of_two_arrays_is_one_group(rng: np.random.Generator) -> None:
    a = [small_ints(rng, (2, 3), np.int32) for _ in range(3)]
    b = [rng.standard_normal((5,)) for _ in range(3)]

    def program(c: SimulatedCommunicator) -> tuple[np.ndarray, np.ndarray]:
        x, y = a[c.rank].copy(), b[c.rank].copy()
        c.allreduce([x, y], "sum", (0, 1, 2))
        return x, y

    for x, y in run(SimulatedWorld(3), program):
        np.testing.assert_array_equal(x, reduced("sum", a))
        np.testing.assert_array_equal(y, reduced("sum", b))


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("block", [0, 1, 2])
def test_reduce_scatter(n: int, axis: int, block: int, rng: np.random.Generator) -> None:
    shape = [3, 1, 5]
    shape[axis] = n * block
    inputs = [small_ints(rng, tuple(shape), np.float64) for _ in range(n)]
    mesh = (*range(1, n), 0)  # rank 0 gets the last block

    def program(c: SimulatedCommunicator) -> np.ndarray:
        out_shape = list(shape)
        out_shape[axis] = block
        out = np.full(out_shape, np.nan)
        c.reduce_scatter(inputs[c.rank], out, "sum", axis, mesh)
        return out

    total = reduced("sum", [inputs[r] for r in mesh])
    blocks = np.split(total, n, axis=axis)
    for rank, got in enumerate(run(SimulatedWorld(n), program)):
        np.testing.assert_array_equal(got, blocks[mesh.index(rank)])


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("block", [0, 1, 3])
def test_allgather(n: int, axis: int, block: int, rng: np.random.Generator) -> None:
    shape = [block, 3] if axis == 0 else [3, block]
    inputs = [small_ints(rng, tuple(shape), np.int64) for _ in range(n)]
    mesh = tuple(reversed(range(n)))

    def program(c: SimulatedCommunicator) -> np.ndarray:
        out_shape = list(shape)
        out_shape[axis] *= n
        out = np.zeros(out_shape, np.int64)
        c.allgather(inputs[c.rank], out, axis, mesh)
        return out

    want = np.concatenate([inputs[r] for r in mesh], axis=axis)
    for got in run(SimulatedWorld(n), program):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", RANKS)
def test_broadcast_from_the_last_rank(n: int, rng: np.random.Generator) -> None:
    inputs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(n)]
    root = n - 1

    def program(c: SimulatedCommunicator) -> np.ndarray:
        x = inputs[c.rank].copy()
        c.broadcast(x, root, tuple(range(n)))
        return x

    for got in run(SimulatedWorld(n), program):
        np.testing.assert_array_equal(got, inputs[root])


def test_sub_meshes_of_four_ranks(rng: np.random.Generator) -> None:
    """[3, 1] and [0, 2] communicate at the same time, each in its own order."""
    inputs = [small_ints(rng, (2, 3), np.float32) for _ in range(4)]

    def program(c: SimulatedCommunicator) -> tuple[np.ndarray, np.ndarray]:
        mesh = (3, 1) if c.rank in (1, 3) else (0, 2)
        gathered = np.zeros((4, 3), np.float32)
        c.allgather(inputs[c.rank], gathered, 0, mesh)
        x = inputs[c.rank].copy()
        c.broadcast(x, mesh[0], mesh)
        c.allreduce([x], "max", mesh)  # the root's values on both
        return gathered, x

    results = run(SimulatedWorld(4), program)
    for rank, (gathered, x) in enumerate(results):
        mesh = (3, 1) if rank in (1, 3) else (0, 2)
        np.testing.assert_array_equal(gathered, np.concatenate([inputs[r] for r in mesh]))
        np.testing.assert_array_equal(x, inputs[mesh[0]])


def test_send_and_recv_in_a_ring_and_in_order() -> None:
    def program(c: SimulatedCommunicator) -> list[int]:
        n = c.size  # (ranks send to the next, receive from the previous)
        c.send(np.array([c.rank, 10]), (c.rank + 1) % n).wait()
        c.send(np.array([c.rank, 20]), (c.rank + 1) % n)
        first, second = np.zeros(2, np.int64), np.zeros(2, np.int64)
        c.recv(first, (c.rank - 1) % n).wait(123)
        c.recv(second, (c.rank - 1) % n)
        return [int(v) for v in (*first, *second)]

    assert run(SimulatedWorld(3), program) == [[2, 10, 2, 20], [0, 10, 0, 20], [1, 10, 1, 20]]


def test_the_simulated_communicator_is_a_communicator() -> None:
    comm: Communicator = SimulatedWorld(2).communicator(1)
    assert (comm.rank, comm.size, comm.local_rank) == (1, 2, 1)


def test_barrier() -> None:
    order: list[str] = []

    def program(c: SimulatedCommunicator) -> None:
        if c.rank == 1:
            time.sleep(0.1)
        order.append(f"before {c.rank}")
        c.barrier()
        order.append(f"after {c.rank}")

    run(SimulatedWorld(2), program)
    assert sorted(order[:2]) == ["before 0", "before 1"]


# --------------------------------------------------------------------------------------------
# Refusals


Program = Callable[[SimulatedCommunicator], object]


def refused(n: int, program: Program) -> str:
    """The message of the CommunicationError a world running `program` fails with."""
    with pytest.raises(CommunicationError) as info:
        SimulatedWorld(n, timeout_s=5.0).run(program)
    return str(info.value)


def test_mismatches_are_refused_by_name() -> None:
    def each(a: Program, b: Program) -> str:
        return refused(2, lambda c: a(c) if c.rank == 0 else b(c))

    x = np.zeros((2, 4), np.float32)
    assert "rank 0 calls allreduce but rank 1 calls broadcast" in each(
        lambda c: c.allreduce([x.copy()], "sum", (0, 1)),
        lambda c: c.broadcast(x.copy(), 0, (0, 1)),
    )
    assert "allreduce on mesh [0, 1]: rank 0 has kind sum but rank 1 has kind max" in each(
        lambda c: c.allreduce([x.copy()], "sum", (0, 1)),
        lambda c: c.allreduce([x.copy()], "max", (0, 1)),
    )
    assert "rank 0 has axis 0 but rank 1 has axis 1" in each(
        lambda c: c.allgather(np.zeros((2, 2)), np.zeros((4, 2)), 0, (0, 1)),
        lambda c: c.allgather(np.zeros((2, 2)), np.zeros((2, 4)), 1, (0, 1)),
    )
    assert "rank 0 has root 0 but rank 1 has root 1" in each(
        lambda c: c.broadcast(x.copy(), 0, (0, 1)),
        lambda c: c.broadcast(x.copy(), 1, (0, 1)),
    )
    assert "rank 0 has float32[2, 4] but rank 1 has float32[4, 2]" in each(
        lambda c: c.allreduce([x.copy()], "sum", (0, 1)),
        lambda c: c.allreduce([x.T.copy()], "sum", (0, 1)),
    )
    assert "rank 0 has float32[2, 4] but rank 1 has float64[2, 4]" in each(
        lambda c: c.allreduce([x.copy()], "sum", (0, 1)),
        lambda c: c.allreduce([x.astype(np.float64)], "sum", (0, 1)),
    )
    assert "rank 0 orders the mesh [0, 1] but rank 1 orders it [1, 0]" in each(
        lambda c: c.allreduce([x.copy()], "sum", (0, 1)),
        lambda c: c.allreduce([x.copy()], "sum", (1, 0)),
    )


def test_a_rank_refuses_what_it_cannot_do() -> None:
    x = np.zeros((3, 4), np.float32)
    assert "rank 0: allreduce on mesh [1]: rank 0 is not in the mesh" in refused(
        2, lambda c: c.allreduce([x], "sum", (1,)) if c.rank == 0 else None
    )
    assert "a mesh lists distinct ranks of 0..1" in refused(
        2, lambda c: c.allreduce([x], "sum", (0, 0, 1))
    )
    assert "a mesh lists distinct ranks of 0..1" in refused(
        2, lambda c: c.allreduce([x], "sum", (0, 2))
    )
    assert "unknown reduction 'avg'" in refused(1, lambda c: c.allreduce([x], "avg", (0,)))
    assert "axis 2 is out of range for a tensor of rank 2" in refused(
        1, lambda c: c.allgather(x, x, 2, (0,))
    )
    assert "reduce_scatter on mesh [0, 1]: axis 0 of extent 3 does not split into 2 blocks" in (
        refused(2, lambda c: c.reduce_scatter(x, x, "sum", 0, (0, 1)))
    )
    assert "the output is float32[3, 4], expected float32[6, 4]" in refused(
        2, lambda c: c.allgather(x, x, 0, (0, 1))
    )
    assert "the output is float64[3, 4], expected float32[3, 4]" in refused(
        1, lambda c: c.allgather(x, x.astype(np.float64), 0, (0,))
    )
    assert "broadcast on mesh [0]: the root 1 is not in the mesh" in refused(
        2, lambda c: c.broadcast(x, 1, (0,)) if c.rank == 0 else None
    )
    assert "rank 1: send to rank 1: the peer must be another rank of 0..1" in refused(
        2, lambda c: c.send(x, 1) if c.rank == 1 else None
    )

    def mismatched_recv(c: SimulatedCommunicator) -> None:
        if c.rank == 0:
            c.send(np.zeros(3, np.int64), 1)
        else:
            c.recv(np.zeros(4, np.int64), 0)

    assert "recv from rank 0: rank 0 sent int64[3] but rank 1 receives into int64[4]" in refused(
        2, mismatched_recv
    )


# --------------------------------------------------------------------------------------------
# Failures: fast, named, and the first one re-raised


def test_a_failing_rank_fails_the_others_fast() -> None:
    seen: dict[int, str] = {}

    def program(c: SimulatedCommunicator) -> None:
        if c.rank == 2:
            raise ValueError("boom")
        if c.rank == 1:
            time.sleep(0.2)  # a communication after the failure fails too
        try:
            c.allreduce([np.zeros(3)], "sum", (0, 1, 2))
        except CommunicationError as e:
            seen[c.rank] = str(e)
            raise

    start = time.monotonic()
    with pytest.raises(ValueError, match="boom"):  # the first failure, not the others'
        SimulatedWorld(3, timeout_s=10.0).run(program)
    assert time.monotonic() - start < 2.0
    assert seen == {
        r: f"rank {r}: allreduce on mesh [0, 1, 2]: rank 2 failed: ValueError: boom" for r in (0, 1)
    }


def test_a_rank_that_does_not_arrive_times_out() -> None:
    def program(c: SimulatedCommunicator) -> None:
        if c.rank == 1:
            time.sleep(0.6)  # busy elsewhere, past the timeout
            return
        c.allreduce([np.zeros(3)], "sum", (0, 1))

    with pytest.raises(CommunicationError) as info:
        SimulatedWorld(2, timeout_s=0.2).run(program)
    assert str(info.value) == (
        "rank 0: allreduce on mesh [0, 1]: rank 1 did not arrive within 0.2 s"
    )


def test_a_rank_that_returns_without_arriving_fails_the_others_at_once() -> None:
    def program(c: SimulatedCommunicator) -> None:
        if c.rank == 0:
            c.recv(np.zeros(3), 1)
        elif c.rank == 1:
            pass  # forgot to send
        else:
            c.allgather(np.zeros(1), np.zeros(2), 0, (1, 2))

    start = time.monotonic()
    with pytest.raises(CommunicationError, match="rank 1 returned without joining it"):
        SimulatedWorld(3, timeout_s=10.0).run(program)
    assert time.monotonic() - start < 2.0


# --------------------------------------------------------------------------------------------
# The launch environment (TorchCommunicator's part that needs no torch)

LAUNCH = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_PORT": "29500"}


def test_launch_environment() -> None:
    assert launch_environment(LAUNCH) == LaunchEnvironment(1, 2, 1, "127.0.0.1", 29500)
    mpi = {
        "OMPI_COMM_WORLD_RANK": "3",
        "OMPI_COMM_WORLD_SIZE": "4",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "1234",
    }
    assert launch_environment(mpi) == LaunchEnvironment(3, 4, 1, "10.0.0.1", 1234)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"RANK": None}, "the launch: RANK is not set (nor OMPI_COMM_WORLD_RANK)"),
        ({"WORLD_SIZE": None}, "rank 1: WORLD_SIZE is not set"),
        ({"LOCAL_RANK": None}, "rank 1: LOCAL_RANK is not set"),
        ({"MASTER_PORT": None}, "rank 1: MASTER_PORT is not set"),
        ({"RANK": "one"}, "the launch: RANK='one' is not an integer"),
        ({"RANK": "2"}, "rank 2: rank 2 is not in a world of 2 ranks"),
        ({"LOCAL_RANK": "5"}, "rank 1: local rank 5 is not in a world of 2 ranks"),
        ({"MASTER_PORT": "70000"}, "rank 1: MASTER_PORT=70000 is not a port number"),
    ],
)
def test_launch_environment_errors(change: dict[str, str | None], message: str) -> None:
    environ = {k: v for k, v in (LAUNCH | change).items() if v is not None}
    with pytest.raises(CommunicationError, match="^" + re.escape(message)):
        launch_environment(environ)


def test_from_environment_without_a_launch_names_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(CommunicationError, match="RANK is not set"):
        TorchCommunicator.from_environment()


def test_communication_timeout() -> None:
    assert communication_timeout(None, {}) == DEFAULT_TIMEOUT_S == 300
    assert communication_timeout(None, {"FUSER_COMM_TIMEOUT": "2.5"}) == 2.5
    assert communication_timeout(7, {"FUSER_COMM_TIMEOUT": "2.5"}) == 7
    with pytest.raises(CommunicationError, match="FUSER_COMM_TIMEOUT='soon' is not a number"):
        communication_timeout(None, {"FUSER_COMM_TIMEOUT": "soon"})
    with pytest.raises(CommunicationError, match="not positive"):
        communication_timeout(0, {})


def test_the_communicators_import_without_torch() -> None:
    code = "import sys, fuser.runtime.communicator, fuser.launch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------------------------
# fuser-launch


def launch(
    tmp_path: Path, script: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.run(
        [sys.executable, "-m", "fuser.launch", *args, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_launch_gives_every_rank_its_environment(tmp_path: Path) -> None:
    script = """
        import os, sys
        names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                 "NVSHMEM_DISABLE_NVLS"]
        print(" ".join(f"{n}={os.environ[n]}" for n in names))
        print("to stderr", file=sys.stderr)
    """
    env = dict(os.environ, NCCL_NVLS_ENABLE="1", TORCH_SYMM_MEM_DISABLE_MULTICAST="0")
    out = launch(tmp_path, script, "-n", "3", env=env)
    assert out.returncode == 0, out.stderr
    lines = sorted(out.stdout.splitlines())
    ports = {line.split("MASTER_PORT=")[1].split()[0] for line in lines}
    assert len(ports) == 1 and int(ports.pop()) > 0
    multicast = " ".join(f"{k}={v}" for k, v in MULTICAST_OFF.items())
    for rank, line in enumerate(lines):
        assert line.startswith(f"[rank {rank}] RANK={rank} WORLD_SIZE=3 LOCAL_RANK={rank} ")
        assert "LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 " in line
        assert line.endswith(multicast)
    assert sorted(out.stderr.splitlines()) == [f"[rank {r}] to stderr" for r in range(3)]


def test_launch_stops_every_rank_when_one_fails(tmp_path: Path) -> None:
    script = """
        import os, sys, time
        if os.environ["RANK"] == "1":
            print("failing", flush=True)
            sys.exit(3)
        time.sleep(60)
    """
    start = time.monotonic()
    out = launch(tmp_path, script, "-n", "3")
    assert time.monotonic() - start < 10
    assert out.returncode == 3
    assert out.stdout == "[rank 1] failing\n"
    assert out.stderr == "fuser-launch: rank 1 exited with code 3; stopping ranks 0, 2\n"


def test_launch_timeout(tmp_path: Path) -> None:
    out = launch(tmp_path, "import time; time.sleep(60)", "-n", "2", "--timeout", "1")
    assert out.returncode == 124
    assert out.stderr == "fuser-launch: timed out after 1 s; stopping ranks 0, 1\n"


def test_launch_stops_every_rank_on_ctrl_c(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "fuser.launch", "-n", "2", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert launcher.stdout is not None
    assert sorted([launcher.stdout.readline(), launcher.stdout.readline()]) == [
        "[rank 0] up\n",
        "[rank 1] up\n",
    ]
    launcher.send_signal(signal.SIGINT)
    _, stderr = launcher.communicate(timeout=30)
    assert launcher.returncode == 130
    assert stderr == "fuser-launch: interrupted; stopping ranks 0, 1\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "0", "script.py"], "argument -n/--nproc: must be at least 1, not 0"),
        (["-n", "two", "script.py"], "argument -n/--nproc: 'two' is not a number of processes"),
        (["-n", "2", "missing.py"], "no such script: missing.py"),
        (["script.py"], "the following arguments are required: -n/--nproc"),
    ],
)
def test_launch_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "script.py").write_text("print('ran')\n")
    out = subprocess.run(
        [sys.executable, "-m", "fuser.launch", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.startswith(f"fuser-launch: error: {message}")
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


# --------------------------------------------------------------------------------------------
# TorchCommunicator on two GPUs

TORCH_SCRIPT = """
import os, sys
import torch
from fuser.errors import CommunicationError
from fuser.runtime.communicator import TorchCommunicator

comm = TorchCommunicator.from_environment(timeout_s=60)
assert TorchCommunicator.from_environment() is comm
assert os.environ["NCCL_NVLS_ENABLE"] == "0"
rank, n = comm.rank, comm.size
device = torch.device("cuda", comm.local_rank)
side = torch.cuda.Stream(device)
other = torch.cuda.Stream(device)
checked = 0


def data(r, shape, salt=0):
    g = torch.Generator().manual_seed(1000 * r + salt)
    return torch.randint(-3, 4, shape, generator=g).float()


def on(t):
    return t.to(device)


def check(name, got, want):
    global checked
    torch.cuda.synchronize()
    if not torch.equal(got.cpu(), want):
        sys.exit(f"rank {rank}: {name}: got {got.cpu()}, expected {want}")
    checked += 1


def issue(work_of_stream):
    # the side stream follows the current one (where inputs were made), as an executor does
    side.wait_stream(torch.cuda.current_stream())
    return work_of_stream(side.cuda_stream)


REDUCE = {"sum": torch.sum, "prod": torch.prod, "max": torch.amax, "min": torch.amin}
meshes = [tuple(range(n)), tuple(reversed(range(n))), (rank,)]
for mesh in meshes:
    m = len(mesh)
    for kind, reduce in REDUCE.items():
        a, b = on(data(rank, (3, 5))), on(data(rank, (6, 4), 1)).t()  # b is not contiguous
        work = issue(lambda s: comm.allreduce([a, b], kind, mesh, s))
        work.wait()
        want_a = reduce(torch.stack([data(r, (3, 5)) for r in mesh]), 0)
        want_b = reduce(torch.stack([data(r, (6, 4), 1) for r in mesh]), 0).t()
        check(f"allreduce {kind} {mesh} a", a, want_a)
        check(f"allreduce {kind} {mesh} b", b, want_b)
    for axis in (0, 1):
        shape = [4, 6]
        shape[axis] = 2 * m
        x = on(data(rank, tuple(shape), 2))
        out_shape = list(shape)
        out_shape[axis] = 2
        out = torch.full(out_shape, float("nan"), device=device)
        issue(lambda s: comm.reduce_scatter(x, out, "sum", axis, mesh, s)).wait(other.cuda_stream)
        other.synchronize()
        total = torch.stack([data(r, tuple(shape), 2) for r in mesh]).sum(0)
        check(f"reduce_scatter {mesh} {axis}", out, total.chunk(m, axis)[mesh.index(rank)])
        y = on(data(rank, (2, 3), 3))
        gathered = torch.zeros((2 * m, 3) if axis == 0 else (2, 3 * m), device=device)
        issue(lambda s: comm.allgather(y, gathered, axis, mesh, s)).wait()
        want = torch.cat([data(r, (2, 3), 3) for r in mesh], axis)
        check(f"allgather {mesh} {axis}", gathered, want)
    z = on(data(rank, (4, 2), 4)).t()
    comm.broadcast(z, mesh[-1], mesh).wait()
    check(f"broadcast {mesh}", z, data(mesh[-1], (4, 2), 4).t())

if n > 1:
    peer = 1 - rank if rank < 2 else None
    if peer is not None:
        sent = on(data(rank, (5,), 5))
        got = torch.zeros((5, 3), device=device)[:, 1]  # not contiguous
        if rank == 0:
            comm.send(sent, peer)
            comm.recv(got, peer).wait()
        else:
            comm.recv(got, peer).wait()
            comm.send(sent, peer)
        check("send/recv", got, data(peer, (5,), 5))
try:
    comm.allgather(on(data(rank, (2, 3))), torch.zeros((3, 3), device=device), 0, tuple(range(n)))
    sys.exit("a wrong output was not refused")
except CommunicationError as e:
    assert str(e).startswith(f"rank {rank}: allgather on mesh"), e
comm.barrier()
print(f"rank {rank}: {checked} communications match", flush=True)
comm.shutdown()
"""


@pytest.mark.gpu
def test_torch_communicator_on_two_gpus(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    out = launch(tmp_path, TORCH_SCRIPT, "-n", "2", "--timeout", "300")
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(line.split(": ")[0] for line in out.stdout.splitlines() if "match" in line) == [
        "[rank 0] rank 0",
        "[rank 1] rank 1",
    ]
