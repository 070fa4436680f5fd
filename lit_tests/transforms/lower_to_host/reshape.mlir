// A reshape stays between segments: the segmenter refuses to merge across it, and the program
// takes it as a view (`host.reshape`) of the tensor before it. A reshape that an output is, of
// a segment's result, is returned as it is (the evaluator allocates that output in its shape);
// one of an input is returned as a view of the input (as nvFuser aliases it): no kernel.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8x4096,2x4,8x12"}' | filecheck %s --check-prefix=SEG
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8x4096,2x4,8x12"},fuser-lower-host' | filecheck %s

fusion.fusion @f(%x: tensor<?x4096xf32>, %y: tensor<2x4xf32>, %z: tensor<?x12xf32>) -> (tensor<2x4xf32>, tensor<?x4x3xf32>) {
  %s = fusion.sum %x [1] : tensor<?x4096xf32> -> tensor<?xf32>
  %r = fusion.reshape %s : tensor<?xf32> -> tensor<2x4xf32>
  %o = fusion.add %r, %y : tensor<2x4xf32>
  %v = fusion.reshape %z : tensor<?x12xf32> -> tensor<?x4x3xf32>
  fusion.output %o, %v : tensor<2x4xf32>, tensor<?x4x3xf32>
}

// SEG:      %s = fusion.segment "reduction" (%x)
// SEG:      %r = fusion.reshape %s : tensor<?xf32> -> tensor<2x4xf32>
// SEG-NEXT: %o = fusion.segment "pointwise" (%y, %r)
// SEG:      %v = fusion.reshape %z : tensor<?x12xf32> -> tensor<?x4x3xf32>
// SEG-NEXT: fusion.output %o, %v : tensor<2x4xf32>, tensor<?x4x3xf32>

// CHECK:      host.launch @f_s0_reduction {{.*}} outs(%s : tensor<?xf32>)
// CHECK-NEXT: %r = host.reshape %s : tensor<?xf32> -> tensor<2x4xf32>
// CHECK:      host.launch @f_s1_pointwise {{.*}} ins(%y, %r : tensor<2x4xf32>, tensor<2x4xf32>) outs(%o : tensor<2x4xf32>)
// CHECK-NEXT: host.deallocate %s : tensor<?xf32>
// CHECK-NEXT: %v = host.reshape %z : tensor<?x12xf32> -> tensor<?x4x3xf32>
// CHECK-NEXT: host.return %o, %v : tensor<2x4xf32>, tensor<?x4x3xf32>
