// A row max whose result feeds a column sum (a reduction over the other axis): no kernel takes
// reductions over different axes, so two reduction segments; the broadcast and the subtraction
// join the second as its prologue. The bf16 input's cast is recomputed in both segments.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8192x1024"}' | filecheck %s

fusion.fusion @row_max_col_sum(%x: tensor<?x?xbf16>) -> (tensor<?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %m = fusion.max %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = fusion.broadcast_in_dim %m [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %c = fusion.sub %xf, %mb : tensor<?x?xf32>
  %s = fusion.sum %c [0] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}

// CHECK:      %m = fusion.segment "reduction" (%x) : (tensor<?x?xbf16>) -> (tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<?x?xbf16>):
// CHECK-NEXT:   %xf = fusion.cast %[[X]] : tensor<?x?xbf16> -> tensor<?x?xf32>
// CHECK-NEXT:   %[[M:.*]] = fusion.max %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   fusion.yield %[[M]] : tensor<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %s = fusion.segment "reduction" (%x, %m) : (tensor<?x?xbf16>, tensor<?xf32>) -> (tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%[[X2:.*]]: tensor<?x?xbf16>, %[[M2:.*]]: tensor<?xf32>):
// CHECK-NEXT:   %d = fusion.dim %[[X2]][1] : tensor<?x?xbf16>
// CHECK-NEXT:   %xf = fusion.cast %[[X2]] : tensor<?x?xbf16> -> tensor<?x?xf32>
// CHECK-NEXT:   %mb = fusion.broadcast_in_dim %[[M2]] [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:   %c = fusion.sub %xf, %mb : tensor<?x?xf32>
// CHECK-NEXT:   %[[S:.*]] = fusion.sum %c [0] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   fusion.yield %[[S]] : tensor<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: fusion.output %s : tensor<?xf32>
