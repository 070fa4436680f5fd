// Host lowering with a merge rule that refuses every merge: one launch per op, each kernel named
// after the scheduler that took its segment (the segments name none).
// RUN: fuser-opt %s -p 'fuser-segment{merge=none},fuser-lower-host{shapes="32x1000"}' | filecheck %s

fusion.fusion @softmax(%x: tensor<?x?xbf16>) -> (tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %e = fusion.exp %xf : tensor<?x?xf32>
  %s = fusion.sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %half = fusion.constant 5.000000e-01 : f32
  %h = fusion.mul %s, %half : (tensor<?xf32>, f32) -> tensor<?xf32>
  %r = fusion.reciprocal %h : tensor<?xf32>
  %rb = fusion.broadcast_in_dim %r [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.mul %e, %rb : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// CHECK:      host.program @softmax(%x: tensor<?x?xbf16>) -> tensor<?x?xf32> attributes {fuser.shapes = "32x1000"} {
// CHECK:        %s = host.allocate(%x_d0) : tensor<?xf32>
// CHECK:        host.launch @softmax_s0_reduction grid({{.*}} ins(%x : tensor<?x?xbf16>) outs(%s : tensor<?xf32>)
// CHECK-NEXT:   %h = host.allocate(%x_d0) : tensor<?xf32>
// CHECK:        host.launch @softmax_s1_pointwise grid({{.*}} ins(%s : tensor<?xf32>) outs(%h : tensor<?xf32>)
// CHECK-NEXT:   host.deallocate %s : tensor<?xf32>
// CHECK-NEXT:   %r = host.allocate(%x_d0) : tensor<?xf32>
// CHECK:        host.launch @softmax_s2_pointwise grid({{.*}} ins(%h : tensor<?xf32>) outs(%r : tensor<?xf32>)
// CHECK-NEXT:   host.deallocate %h : tensor<?xf32>
// CHECK-NEXT:   %x_d1 = host.dim %x[1] : tensor<?x?xbf16>
// CHECK-NEXT:   %rb = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        host.launch @softmax_s3_pointwise grid({{.*}} ins(%x, %r : tensor<?x?xbf16>, tensor<?xf32>) outs(%rb : tensor<?x?xf32>)
// CHECK-NEXT:   host.deallocate %r : tensor<?xf32>
// CHECK-NEXT:   %y = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        host.launch @softmax_s4_pointwise grid({{.*}} ins(%x, %rb : tensor<?x?xbf16>, tensor<?x?xf32>) outs(%y : tensor<?x?xf32>)
// CHECK-NEXT:   host.deallocate %rb : tensor<?x?xf32>
// CHECK-NEXT:   host.return %y : tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-COUNT-5: kernel.func @softmax_s{{[0-4]}}_{{reduction|pointwise}}(
