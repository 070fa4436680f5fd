"""Passes on fuser IR: segmentation, rewrites, scheduling and lowering."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Our passes by name, each imported on first use."""

    def get_schedule() -> type[ModulePass]:
        from fuser.transforms.schedule import ScheduleFusionPass

        return ScheduleFusionPass

    return {"fuser-schedule": get_schedule}
