"""Passes on fuser IR: segmentation, rewrites, scheduling and lowering."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Our passes by name, each imported on first use."""

    def get_schedule() -> type[ModulePass]:
        from fuser.transforms.schedule import ScheduleFusionPass

        return ScheduleFusionPass

    def get_decompose() -> type[ModulePass]:
        from fuser.transforms.decompose import DecomposePass

        return DecomposePass

    def get_output_layouts() -> type[ModulePass]:
        from fuser.transforms.output_layouts import OutputLayoutsPass

        return OutputLayoutsPass

    def get_hoist_views() -> type[ModulePass]:
        from fuser.transforms.hoist_views import HoistViewsPass

        return HoistViewsPass

    def get_segment() -> type[ModulePass]:
        from fuser.transforms.segment import SegmentFusionPass

        return SegmentFusionPass

    def get_lower_host() -> type[ModulePass]:
        from fuser.transforms.lower_to_host import LowerToHostPass

        return LowerToHostPass

    def get_split_k() -> type[ModulePass]:
        from fuser.transforms.split_k import SplitKPass

        return SplitKPass

    def get_split_reductions() -> type[ModulePass]:
        from fuser.transforms.split_reductions import SplitReductionsPass

        return SplitReductionsPass

    def get_lower_stream_parallel() -> type[ModulePass]:
        from fuser.transforms.lower_stream_parallel import LowerStreamParallelPass

        return LowerStreamParallelPass

    def get_compile() -> type[ModulePass]:
        from fuser.transforms.pipeline import CompilePass

        return CompilePass

    def get_plan_memory() -> type[ModulePass]:
        from fuser.transforms.plan_memory import PlanMemoryPass

        return PlanMemoryPass

    def get_translate_welford() -> type[ModulePass]:
        from fuser.transforms.translate_welford import TranslateWelfordPass

        return TranslateWelfordPass

    def get_shard() -> type[ModulePass]:
        from fuser.transforms.shard import ShardPass

        return ShardPass

    return {
        "fuser-schedule": get_schedule,
        "fuser-shard": get_shard,
        "fuser-decompose": get_decompose,
        "fuser-output-layouts": get_output_layouts,
        "fuser-hoist-views": get_hoist_views,
        "fuser-segment": get_segment,
        "fuser-lower-host": get_lower_host,
        "lower-stream-parallel": get_lower_stream_parallel,
        "fuser-plan-memory": get_plan_memory,
        "fuser-compile": get_compile,
        "split-k": get_split_k,
        "split-reductions": get_split_reductions,
        "translate-welford": get_translate_welford,
    }
