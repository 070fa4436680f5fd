"""The CUDA emitter: prints the `kernel` dialect as CUDA C++ (the `cuda` target of fuser-opt)."""

from collections.abc import Callable

from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """Our targets by name, each imported on first use."""

    def cuda() -> type[Target]:
        from fuser.codegen.cuda import CudaTarget

        return CudaTarget

    return {"cuda": cuda}
