// What the stream lowering refuses, each with a one-line error and exit code 1.
// RUN: not fuser-opt %s -p 'fuser-segment{shapes=4x6}' 2>&1 | filecheck %s --check-prefix=INNER
// RUN: not fuser-opt %s -p 'fuser-segment{shapes=4x6},fuser-lower-host{shapes=4x6},lower-stream-parallel{streams=0}' 2>&1 | filecheck %s --check-prefix=STREAMS

// A stored tensor sliced along an inner axis: its slices would not be contiguous.
fusion.fusion @inner(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %y = fusion.exp %x {fusion.stream_axis = 1 : i64} : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// INNER: fuser-opt: error: fusion @inner: no scheduler accepts segment g0{exp %y}: @inner_segment: output #0 (%y) is stream-parallel along axis 1, not its outermost: its slices would not be contiguous, and kernels write contiguous tensors
// INNER-NOT: Traceback
// STREAMS: fuser-opt: error: lower-stream-parallel: streams must be at least 1, got 0
// STREAMS-NOT: Traceback
