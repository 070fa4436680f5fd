// A fusion that no scheduler accepts yet: the error lists every scheduler's reason.
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="32x64"}' 2>&1 | filecheck %s

fusion.fusion @softmax_denominator(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %e = fusion.exp %x : tensor<?x?xf32>
  %s = fusion.sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}

// CHECK:      fuser-opt: error: no scheduler accepts fusion @softmax_denominator:
// CHECK-NEXT:   pointwise: 'fusion.sum' (%s) is a reduction
// CHECK-NOT:  Traceback
