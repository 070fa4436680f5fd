"""Passes on fuser IR: segmentation, rewrites, scheduling and lowering."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Our passes by name, each imported on first use."""

    def get_schedule() -> type[ModulePass]:
        from fuser.transforms.schedule import ScheduleFusionPass

        return ScheduleFusionPass

    def get_segment() -> type[ModulePass]:
        from fuser.transforms.segment import SegmentFusionPass

        return SegmentFusionPass

    def get_lower_host() -> type[ModulePass]:
        from fuser.transforms.lower_to_host import LowerToHostPass

        return LowerToHostPass

    return {
        "fuser-schedule": get_schedule,
        "fuser-segment": get_segment,
        "fuser-lower-host": get_lower_host,
    }
