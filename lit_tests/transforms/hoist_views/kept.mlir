// fuser-hoist-views moves a reshape that keeps run-time extents (`kept`) up a pointwise chain
// as any reshape: the operands share the result's shape, so they keep the same dims. A reshape
// of a reshape folds where the inner one keeps every dim the outer keeps, keeping those.
// RUN: fuser-opt %s -p fuser-hoist-views | filecheck %s

fusion.fusion @split_exp_merge(%x: tensor<?x?x64xf32>) -> (tensor<?x?xf32>) {
  %y = fusion.reshape %x kept [0, 1] : tensor<?x?x64xf32> -> tensor<?x?x8x8xf32>
  %e = fusion.exp %y : tensor<?x?x8x8xf32>
  %z = fusion.reshape %e kept [0, 1] : tensor<?x?x8x8xf32> -> tensor<?x?x64xf32>
  %s = fusion.sum %z [2] : tensor<?x?x64xf32> -> tensor<?x?xf32>
  fusion.output %s : tensor<?x?xf32>
}

// The split and the merge meet at the input and fold to no reshape at all.
// CHECK-LABEL: fusion.fusion @split_exp_merge
// CHECK-NEXT:    %z = fusion.exp %x : tensor<?x?x64xf32>
// CHECK-NEXT:    %s = fusion.sum %z [2] : tensor<?x?x64xf32> -> tensor<?x?xf32>

fusion.fusion @kept_over_unkept(%x: tensor<?x64xf32>) -> (tensor<?x4x4xf32>) {
  %y = fusion.reshape %x : tensor<?x64xf32> -> tensor<?x16xf32>
  %z = fusion.reshape %y kept [0] : tensor<?x16xf32> -> tensor<?x4x4xf32>
  fusion.output %z : tensor<?x4x4xf32>
}

// The outer reshape keeps dim 0 of %y, which is not %x's: no fold.
// CHECK-LABEL: fusion.fusion @kept_over_unkept
// CHECK-NEXT:    %y = fusion.reshape %x : tensor<?x64xf32> -> tensor<?x16xf32>
// CHECK-NEXT:    %z = fusion.reshape %y kept [0] : tensor<?x16xf32> -> tensor<?x4x4xf32>
