"""The dialects of fuser: `fusion` (tensors), `kernel` (one GPU kernel), `host` (the program
around kernels), and `libm` (the scalar math functions xDSL's `math` lacks, which kernels call).
This layer imports nothing else of fuser's."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Our dialects by name, each imported on first use."""

    def fusion() -> Dialect:
        from fuser.dialects.fusion import Fusion

        return Fusion

    def kernel() -> Dialect:
        from fuser.dialects.kernel import Kernel

        return Kernel

    def host() -> Dialect:
        from fuser.dialects.host import Host

        return Host

    def libm() -> Dialect:
        from fuser.dialects.libm import Libm

        return Libm

    return {"fusion": fusion, "kernel": kernel, "host": host, "libm": libm}
