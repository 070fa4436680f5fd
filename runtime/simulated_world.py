"""A simulated world of ranks for tests: the communications of a multi-GPU run as threads of one
process over numpy arrays.

`SimulatedWorld(n)` runs `n` ranks, each with a `SimulatedCommunicator` that implements
`fuser.runtime.communicator.Communicator` with numpy: the ranks of a mesh must agree on every
communication (the checks and errors of `fuser.runtime.communicator`), so the executor of a
rank's program (`fuser.runtime.multidevice`) and the decomposition of `fuser-shard` are tested
without a GPU, and a rank that fails or never arrives fails the others fast instead of hanging
them.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from fuser.errors import FuserError
from fuser.runtime.communicator import (
    Work,
    _axis,
    _check_kind,
    _check_mesh,
    _check_output,
    _check_peer,
    _gathered_shape,
    _ranks_text,
    _scattered_shape,
    _seconds,
    _Site,
    _tensor_text,
)

T = TypeVar("T")

_NUMPY_REDUCTIONS: dict[str, np.ufunc] = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def _reduce(kind: str, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The reduction of `arrays` in their dtype, in order (so results are deterministic)."""
    ufunc = _NUMPY_REDUCTIONS[kind]
    result = arrays[0].copy()
    for a in arrays[1:]:
        ufunc(result, a, out=result)
    return result


class _DoneWork:
    """The Work of a simulated communication: done when it returns."""

    def wait(self, stream: int | None = None) -> None:
        pass


_DONE = _DoneWork()


@dataclass
class _Arrival:
    """One rank's call of a collective: what the other ranks must agree on, and its inputs."""

    op: str
    mesh: tuple[int, ...]
    params: dict[str, object]
    inputs: list[np.ndarray]

    def tensors(self) -> str:
        return ", ".join(_tensor_text(a.dtype, a.shape) for a in self.inputs)


Combine = Callable[[dict[int, _Arrival]], dict[int, Any]]
"""Every rank's result of a collective, from every rank's arrival."""


@dataclass
class _Slot:
    """The i-th collective on one set of ranks: its arrivals, then its results or its error."""

    arrivals: dict[int, _Arrival] = field(default_factory=dict)
    results: dict[int, Any] | None = None
    error: str | None = None
    taken: int = 0


def _disagreement(arrivals: dict[int, _Arrival]) -> str | None:
    """How the arrivals of a collective differ (None: they agree)."""
    ranks = sorted(arrivals)
    a = arrivals[ranks[0]]
    for r in ranks[1:]:
        b = arrivals[r]
        if a.op != b.op:
            return f"rank {ranks[0]} calls {a.op} but rank {r} calls {b.op}"
        if a.mesh != b.mesh:
            return (
                f"rank {ranks[0]} orders the mesh {_ranks_text(a.mesh)} but rank {r} orders it"
                f" {_ranks_text(b.mesh)}"
            )
        for name, value in a.params.items():
            if b.params[name] != value:
                return (
                    f"rank {ranks[0]} has {name} {value} but rank {r} has {name} {b.params[name]}"
                )
        if a.tensors() != b.tensors():
            return f"rank {ranks[0]} has {a.tensors()} but rank {r} has {b.tensors()}"
    return None


class SimulatedWorld:
    """`n` ranks as threads of this process, communicating numpy arrays, for tests.

    A collective is a rendezvous of its mesh's ranks: the i-th call of each rank on the same set
    of ranks meet, must agree (op, mesh order, kind, axis, root, shapes and dtypes), and all
    return once every one has arrived, their results written (so `Work.wait` is a no-op). A send
    returns at once (the array is copied); a recv waits for the matching send (per pair of ranks,
    in order). A rank that does not arrive within `timeout_s`, or that returned from `run`
    without arriving, fails the waiting ranks with a CommunicationError naming it. Once a rank
    fails, every pending or later communication of every rank raises CommunicationError
    ("rank 2 failed: ..."); a failed world stays failed.
    """

    def __init__(self, n: int, timeout_s: float = 10.0) -> None:
        if n < 1:
            raise ValueError(f"a world has at least one rank, not {n}")
        self.size = n
        self.timeout_s = timeout_s
        self._cond = threading.Condition()
        self._counts: dict[tuple[tuple[int, ...], int], int] = {}
        self._slots: dict[tuple[tuple[int, ...], int], _Slot] = {}
        self._mail: dict[tuple[int, int], deque[np.ndarray]] = {}
        self._failure: tuple[int, BaseException] | None = None
        self._returned: set[int] = set()

    def communicator(self, rank: int) -> SimulatedCommunicator:
        if not 0 <= rank < self.size:
            raise ValueError(f"rank {rank} is not in a world of {self.size}")
        return SimulatedCommunicator(self, rank)

    def run(self, fn: Callable[[SimulatedCommunicator], T]) -> list[T]:
        """`fn` on every rank, one thread each; the results in rank order. If a rank raises, the
        others' communications fail fast and `run` re-raises the first rank's exception."""
        results: list[Any] = [None] * self.size
        with self._cond:
            self._returned.clear()

        def body(rank: int) -> None:
            try:
                results[rank] = fn(self.communicator(rank))
            except BaseException as e:
                self._fail(rank, e)
            finally:
                with self._cond:
                    self._returned.add(rank)
                    self._cond.notify_all()

        threads = [
            threading.Thread(target=body, args=(r,), name=f"rank {r}", daemon=True)
            for r in range(self.size)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._failure is not None:
            raise self._failure[1]
        return results

    # -- the rendezvous (every method below holds or takes self._cond)

    def _fail(self, rank: int, error: BaseException) -> None:
        with self._cond:
            if self._failure is None:
                self._failure = (rank, error)
            self._cond.notify_all()

    def _check_failed(self, site: _Site) -> None:
        if self._failure is not None:
            rank, e = self._failure
            cause = str(e) if isinstance(e, FuserError) else f"{type(e).__name__}: {e}"
            raise site.error(f"rank {rank} failed: {cause}")

    def _wait(
        self, site: _Site, ready: Callable[[], bool], missing: Callable[[], list[int]]
    ) -> None:
        """Wait until `ready()`, failing when the world failed, when a rank of `missing()`
        returned, or after the timeout."""
        deadline = time.monotonic() + self.timeout_s
        while not ready():
            self._check_failed(site)
            absent = missing()
            gone = [r for r in absent if r in self._returned]
            if gone:
                raise site.error(f"{_who(gone)} returned without joining it")
            left = deadline - time.monotonic()
            if left <= 0:
                raise site.error(f"{_who(absent)} did not arrive within {_seconds(self.timeout_s)}")
            self._cond.wait(left)

    def _collective(self, site: _Site, arrival: _Arrival, combine: Combine) -> Any:
        """Join the collective `arrival` belongs to; this rank's result once all arrived."""
        key = tuple(sorted(arrival.mesh))
        with self._cond:
            self._check_failed(site)
            index = self._counts.get((key, site.rank), 0)
            self._counts[key, site.rank] = index + 1
            slot = self._slots.setdefault((key, index), _Slot())
            slot.arrivals[site.rank] = arrival
            if len(slot.arrivals) == len(key):
                slot.error = _disagreement(slot.arrivals)
                if slot.error is None:
                    slot.results = combine(slot.arrivals)
                self._cond.notify_all()
            self._wait(
                site,
                lambda: slot.results is not None or slot.error is not None,
                lambda: [r for r in key if r not in slot.arrivals],
            )
            slot.taken += 1
            if slot.taken == len(key):
                del self._slots[key, index]
            if slot.error is not None:
                raise site.error(slot.error)
            assert slot.results is not None
            return slot.results[site.rank]

    def _post(self, site: _Site, src: int, dst: int, array: np.ndarray) -> None:
        with self._cond:
            self._check_failed(site)
            self._mail.setdefault((src, dst), deque()).append(array.copy())
            self._cond.notify_all()

    def _take(self, site: _Site, src: int, dst: int) -> np.ndarray:
        with self._cond:
            self._check_failed(site)
            box = self._mail.setdefault((src, dst), deque())
            self._wait(site, lambda: bool(box), lambda: [src])
            return box.popleft()


def _who(ranks: Sequence[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


class SimulatedCommunicator:
    """One rank of a `SimulatedWorld` (a Communicator over numpy arrays)."""

    def __init__(self, world: SimulatedWorld, rank: int) -> None:
        self.world = world
        self.rank = rank
        self.size = world.size
        self.local_rank = rank

    def _site(self, op: str, mesh: tuple[int, ...]) -> _Site:
        site = _Site.of(self.rank, op, mesh)
        self.world._check_failed(site)
        _check_mesh(site, mesh, self.size)
        return site

    def allreduce(
        self, tensors: list[Any], kind: str, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        site = self._site("allreduce", mesh)
        _check_kind(site, kind)

        def combine(arrivals: dict[int, _Arrival]) -> dict[int, Any]:
            reduced = [
                _reduce(kind, [arrivals[r].inputs[i] for r in mesh]) for i in range(len(tensors))
            ]
            return dict.fromkeys(mesh, reduced)

        arrival = _Arrival("allreduce", mesh, {"kind": kind}, [np.array(t) for t in tensors])
        for t, result in zip(tensors, self.world._collective(site, arrival, combine), strict=True):
            np.copyto(t, result)
        return _DONE

    def reduce_scatter(
        self,
        input: Any,
        output: Any,
        kind: str,
        axis: int,
        mesh: tuple[int, ...],
        stream: int | None = None,
    ) -> Work:
        site = self._site("reduce_scatter", mesh)
        _check_kind(site, kind)
        axis = _axis(site, axis, input.shape)
        _check_output(
            site, output, input.dtype, _scattered_shape(site, input.shape, axis, len(mesh))
        )

        def combine(arrivals: dict[int, _Arrival]) -> dict[int, Any]:
            reduced = _reduce(kind, [arrivals[r].inputs[0] for r in mesh])
            blocks = np.split(reduced, len(mesh), axis=axis)
            return {r: blocks[i] for i, r in enumerate(mesh)}

        params: dict[str, object] = {"kind": kind, "axis": axis}
        arrival = _Arrival("reduce_scatter", mesh, params, [np.array(input)])
        np.copyto(output, self.world._collective(site, arrival, combine))
        return _DONE

    def allgather(
        self, input: Any, output: Any, axis: int, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        site = self._site("allgather", mesh)
        axis = _axis(site, axis, input.shape)
        _check_output(site, output, input.dtype, _gathered_shape(input.shape, axis, len(mesh)))

        def combine(arrivals: dict[int, _Arrival]) -> dict[int, Any]:
            gathered = np.concatenate([arrivals[r].inputs[0] for r in mesh], axis=axis)
            return dict.fromkeys(mesh, gathered)

        arrival = _Arrival("allgather", mesh, {"axis": axis}, [np.array(input)])
        np.copyto(output, self.world._collective(site, arrival, combine))
        return _DONE

    def broadcast(
        self, tensor: Any, root: int, mesh: tuple[int, ...], stream: int | None = None
    ) -> Work:
        site = self._site("broadcast", mesh)
        if root not in mesh:
            raise site.error(f"the root {root} is not in the mesh")

        def combine(arrivals: dict[int, _Arrival]) -> dict[int, Any]:
            return dict.fromkeys(mesh, arrivals[root].inputs[0])

        arrival = _Arrival("broadcast", mesh, {"root": root}, [np.array(tensor)])
        np.copyto(tensor, self.world._collective(site, arrival, combine))
        return _DONE

    def send(self, tensor: Any, peer: int, stream: int | None = None) -> Work:
        site = _Site(self.rank, f"send to rank {peer}")
        _check_peer(site, peer, self.size)
        self.world._post(site, self.rank, peer, np.asarray(tensor))
        return _DONE

    def recv(self, tensor: Any, peer: int, stream: int | None = None) -> Work:
        site = _Site(self.rank, f"recv from rank {peer}")
        _check_peer(site, peer, self.size)
        received = self.world._take(site, peer, self.rank)
        got, want = (
            _tensor_text(received.dtype, received.shape),
            _tensor_text(tensor.dtype, tensor.shape),
        )
        if got != want:
            raise site.error(f"rank {peer} sent {got} but rank {self.rank} receives into {want}")
        np.copyto(tensor, received)
        return _DONE

    def barrier(self) -> None:
        mesh = tuple(range(self.size))
        site = self._site("barrier", mesh)
        self.world._collective(site, _Arrival("barrier", mesh, {}, []), lambda a: dict.fromkeys(a))
