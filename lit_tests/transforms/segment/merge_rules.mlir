// Merge rules replace the schedulers. With `merge=none` every merge is refused, so each op is a
// segment of its own, except the unary chain from the input (cast, exp), which is forwarded:
// recomputed in each segment that reads it. Constants and dims are cloned where they are used;
// the broadcast takes %x only for the extent of dim 1. `standalone-host-ops` keeps binary ops
// and reductions alone but merges the rest (the reciprocal and its broadcast). No scheduler is
// asked: the segments name the scheduler "", and no shapes are needed.
// RUN: fuser-opt %s -p 'fuser-segment{merge=none}' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{merge=standalone-host-ops}' | filecheck %s --check-prefix=HOST

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

// CHECK:      %s = fusion.segment "" (%x) : (tensor<?x?xbf16>) -> (tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<?x?xbf16>):
// CHECK-NEXT:   %xf = fusion.cast %[[X]] : tensor<?x?xbf16> -> tensor<?x?xf32>
// CHECK-NEXT:   %e = fusion.exp %xf : tensor<?x?xf32>
// CHECK-NEXT:   %[[S:.*]] = fusion.sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   fusion.yield %[[S]] : tensor<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %h = fusion.segment "" (%s) : (tensor<?xf32>) -> (tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%[[S2:.*]]: tensor<?xf32>):
// CHECK-NEXT:   %half = fusion.constant 5.000000e-01 : f32
// CHECK-NEXT:   %[[H:.*]] = fusion.mul %[[S2]], %half : (tensor<?xf32>, f32) -> tensor<?xf32>
// CHECK-NEXT:   fusion.yield %[[H]] : tensor<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %r = fusion.segment "" (%h) : (tensor<?xf32>) -> (tensor<?xf32>) {
// CHECK:      %rb = fusion.segment "" (%x, %r) : (tensor<?x?xbf16>, tensor<?xf32>) -> (tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%[[X3:.*]]: tensor<?x?xbf16>, %[[R:.*]]: tensor<?xf32>):
// CHECK-NEXT:   %d = fusion.dim %[[X3]][1] : tensor<?x?xbf16>
// CHECK-NEXT:   %{{.*}} = fusion.broadcast_in_dim %[[R]] [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
// CHECK:      %y = fusion.segment "" (%x, %rb) : (tensor<?x?xbf16>, tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// CHECK:        %xf = fusion.cast
// CHECK-NEXT:   %e = fusion.exp %xf
// CHECK-NEXT:   %{{.*}} = fusion.mul %e, %{{.*}} : tensor<?x?xf32>
// CHECK:      fusion.output %y : tensor<?x?xf32>
// CHECK-NOT:  fusion.segment

// HOST:      %s = fusion.segment "" (%x) : (tensor<?x?xbf16>) -> (tensor<?xf32>) {
// HOST:      %h = fusion.segment "" (%s) : (tensor<?xf32>) -> (tensor<?xf32>) {
// HOST:      %rb = fusion.segment "" (%x, %h) : (tensor<?x?xbf16>, tensor<?xf32>) -> (tensor<?x?xf32>) {
// HOST:        fusion.reciprocal
// HOST-NEXT:   fusion.broadcast_in_dim
// HOST:      %y = fusion.segment "" (%x, %rb) : (tensor<?x?xbf16>, tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// HOST-NOT:  fusion.segment
