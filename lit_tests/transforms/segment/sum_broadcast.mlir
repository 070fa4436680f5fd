// A sum, broadcast back to the shape of another tensor and divided into it: one normalization
// (persistent) segment while a row fits in registers; a reduction segment and a pointwise one when
// it does not. The pointwise segment recomputes the extent of dim 1 from %z (which has it) rather
// than taking %x.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="4096x1024,4096x1024"}' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{shapes="64x100000,64x100000"}' | filecheck %s --check-prefix=SPLIT

fusion.fusion @sum_div(%x: tensor<?x?xf32>, %z: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %sb = fusion.broadcast_in_dim %s [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.div %z, %sb : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// CHECK:      %y = fusion.segment "persistent" (%x, %z) : (tensor<?x?xf32>, tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<?x?xf32>, %[[Z:.*]]: tensor<?x?xf32>):
// CHECK-NEXT:   %d = fusion.dim %[[X]][1] : tensor<?x?xf32>
// CHECK-NEXT:   %s = fusion.sum %[[X]] [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   %sb = fusion.broadcast_in_dim %s [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:   %[[Y:.*]] = fusion.div %[[Z]], %sb : tensor<?x?xf32>
// CHECK-NEXT:   fusion.yield %[[Y]] : tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: fusion.output %y : tensor<?x?xf32>

// SPLIT:      %s = fusion.segment "reduction" (%x) : (tensor<?x?xf32>) -> (tensor<?xf32>) {
// SPLIT-NEXT: ^bb0(%[[X:.*]]: tensor<?x?xf32>):
// SPLIT-NEXT:   %[[S:.*]] = fusion.sum %[[X]] [1] : tensor<?x?xf32> -> tensor<?xf32>
// SPLIT-NEXT:   fusion.yield %[[S]] : tensor<?xf32>
// SPLIT-NEXT: }
// SPLIT-NEXT: %y = fusion.segment "pointwise" (%z, %s) : (tensor<?x?xf32>, tensor<?xf32>) -> (tensor<?x?xf32>) {
// SPLIT-NEXT: ^bb0(%[[Z:.*]]: tensor<?x?xf32>, %[[S2:.*]]: tensor<?xf32>):
// SPLIT-NEXT:   %d = fusion.dim %[[Z]][1] : tensor<?x?xf32>
// SPLIT-NEXT:   %sb = fusion.broadcast_in_dim %[[S2]] [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
// SPLIT-NEXT:   %[[Y:.*]] = fusion.div %[[Z]], %sb : tensor<?x?xf32>
// SPLIT-NEXT:   fusion.yield %[[Y]] : tensor<?x?xf32>
// SPLIT-NEXT: }
// SPLIT-NEXT: fusion.output %y : tensor<?x?xf32>
