// fusion.segment and fusion.yield: a segmented fusion, each segment isolated with its inputs as
// block arguments and the scheduler that accepted it.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

fusion.fusion @sum_then_scale(%x: tensor<?x?xf32>, %s: f32) -> (tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %r = fusion.segment "reduction" (%x) : (tensor<?x?xf32>) -> (tensor<?xf32>) {
  ^bb0(%x0: tensor<?x?xf32>):
    %sum = fusion.sum %x0 [0] : tensor<?x?xf32> -> tensor<?xf32>
    fusion.yield %sum : tensor<?xf32>
  }
  %y = fusion.segment "pointwise" (%x, %r, %s, %n) : (tensor<?x?xf32>, tensor<?xf32>, f32, index) -> (tensor<?x?xf32>) {
  ^bb0(%x1: tensor<?x?xf32>, %r1: tensor<?xf32>, %s1: f32, %n1: index):
    %rb = fusion.broadcast_in_dim %r1 [1] sizes(%n1) : tensor<?xf32> -> tensor<?x?xf32>
    %d = fusion.div %x1, %rb : tensor<?x?xf32>
    %y1 = fusion.mul %d, %s1 : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>
    fusion.yield %y1 : tensor<?x?xf32>
  }
  fusion.output %y : tensor<?x?xf32>
}

// CHECK:      %r = fusion.segment "reduction" (%x) : (tensor<?x?xf32>) -> (tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%x0: tensor<?x?xf32>):
// CHECK-NEXT:   %sum = fusion.sum %x0 [0] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:   fusion.yield %sum : tensor<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %y = fusion.segment "pointwise" (%x, %r, %s, %n) : (tensor<?x?xf32>, tensor<?xf32>, f32, index) -> (tensor<?x?xf32>) {
// CHECK:        fusion.yield %y1 : tensor<?x?xf32>
// CHECK:      fusion.output %y : tensor<?x?xf32>

// CHECK-GENERIC: %r = "fusion.segment"(%x) <{scheduler = "reduction"}> ({
// CHECK-GENERIC: "fusion.yield"(%sum) : (tensor<?xf32>) -> ()
// CHECK-GENERIC: }) : (tensor<?x?xf32>) -> tensor<?xf32>
