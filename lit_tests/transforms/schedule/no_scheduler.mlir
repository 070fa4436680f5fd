// A fusion that no single kernel holds: the error lists every scheduler's reason.
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="32x64"}' 2>&1 | filecheck %s

fusion.fusion @two_axes(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %rows = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %cols = fusion.sum %x [0] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %rows, %cols : tensor<?xf32>, tensor<?xf32>
}

// CHECK:      fuser-opt: error: no scheduler accepts fusion @two_axes:
// CHECK-NEXT:   transpose: not a pointwise fusion (the pointwise scheduler says why)
// CHECK-NEXT:   pointwise: 'fusion.sum' (%rows) is a reduction
// CHECK-NEXT:   reduction: 'fusion.sum' (%cols) reduces [?, ?] over [0], but 'fusion.sum' (%rows) reduces [?, ?] over [1]: one kernel takes reductions of one shape over the same axes
// CHECK-NEXT:   persistent: 'fusion.sum' (%cols) reduces [?, ?] over [0], but
// CHECK-NOT:  Traceback
