// An output that is a fusion input through reshapes, slices and permutes is returned as a view of
// it (as nvFuser aliases it): the segmenter leaves those ops between segments, no kernel computes
// it, and the program takes the views of its argument (`host.permute` too). A permute that a
// kernel also reads is read through by the kernel, and the output it is gets computed.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8x2048x4096,3x5"}' | filecheck %s --check-prefix=SEG
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8x2048x4096,3x5"},fuser-lower-host' | filecheck %s

fusion.fusion @f(%x: tensor<?x?x4096xbf16>, %y: tensor<?x?xf32>) -> (tensor<8x32x2048x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %v = fusion.reshape %x : tensor<?x?x4096xbf16> -> tensor<8x2048x32x128xbf16>
  %h = fusion.permute %v [0, 2, 1, 3] : tensor<8x2048x32x128xbf16> -> tensor<8x32x2048x128xbf16>
  %t = fusion.permute %y [1, 0] : tensor<?x?xf32> -> tensor<?x?xf32>
  %e = fusion.exp %t : tensor<?x?xf32>
  fusion.output %h, %t, %e : tensor<8x32x2048x128xbf16>, tensor<?x?xf32>, tensor<?x?xf32>
}

// SEG:      %t, %e = fusion.segment "pointwise" (%y)
// SEG:        %t_1 = fusion.permute %y_1 [1, 0]
// SEG:        %e_1 = fusion.exp %t_1
// SEG:      %v = fusion.reshape %x
// SEG-NEXT: %h = fusion.permute %v [0, 2, 1, 3]
// SEG-NEXT: fusion.output %h, %t, %e
// SEG-NOT:  fusion.segment

// CHECK:      host.program @f
// CHECK:      %v = host.reshape %x : tensor<?x?x4096xbf16> -> tensor<8x2048x32x128xbf16>
// CHECK-NEXT: %h = host.permute %v [0, 2, 1, 3] : tensor<8x2048x32x128xbf16> -> tensor<8x32x2048x128xbf16>
// CHECK-NEXT: host.return %h, %t, %e
