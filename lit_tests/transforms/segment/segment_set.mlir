// Two segment_sets force exactly three segments: a group may end at a segment_set (which becomes
// a plain set inside it, yielded) but never contain one of its consumers.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="1024x1024,1024x1024"}' | filecheck %s

fusion.fusion @forced(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %a = fusion.add %x, %y : tensor<?x?xf32>
  %e = fusion.exp %a : tensor<?x?xf32>
  %s1 = fusion.segment_set %e : tensor<?x?xf32>
  %m = fusion.mul %s1, %x : tensor<?x?xf32>
  %t = fusion.tanh %m : tensor<?x?xf32>
  %s2 = fusion.segment_set %t : tensor<?x?xf32>
  %n = fusion.neg %s2 : tensor<?x?xf32>
  fusion.output %n, %t : tensor<?x?xf32>, tensor<?x?xf32>
}

// CHECK:      %s1 = fusion.segment "pointwise" (%x, %y) : (tensor<?x?xf32>, tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// CHECK:        %a = fusion.add
// CHECK-NEXT:   %e = fusion.exp %a : tensor<?x?xf32>
// CHECK-NEXT:   %[[S1:.*]] = fusion.set %e : tensor<?x?xf32>
// CHECK-NEXT:   fusion.yield %[[S1]] : tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %t, %s2 = fusion.segment "pointwise" (%x, %s1) : (tensor<?x?xf32>, tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
// CHECK:        %m = fusion.mul
// CHECK-NEXT:   %[[T:.*]] = fusion.tanh %m : tensor<?x?xf32>
// CHECK-NEXT:   %[[S2:.*]] = fusion.set %[[T]] : tensor<?x?xf32>
// CHECK-NEXT:   fusion.yield %[[T]], %[[S2]] : tensor<?x?xf32>, tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %n = fusion.segment "pointwise" (%s2) : (tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// CHECK:        fusion.neg
// CHECK:      fusion.output %n, %t : tensor<?x?xf32>, tensor<?x?xf32>
// CHECK-NOT:  fusion.segment_set
