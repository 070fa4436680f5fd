"""Executes what the compiler produced: NVRTC, CUDA driver calls, launches, the numpy reference."""
