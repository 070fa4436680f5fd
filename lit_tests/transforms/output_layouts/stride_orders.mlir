// fuser-output-layouts: an output with a stride order becomes the row-major tensor of its dims
// taken outermost first (a fusion.permute the kernels write); fd.execute hands it back through
// the inverse permutation. A row-major order and an output without one are left alone.
// RUN: fuser-opt %s -p fuser-output-layouts | filecheck %s

fusion.fusion @layouts(%x: tensor<?x3x5xf32>) -> (tensor<?x3x5xf32>, tensor<?x5xf32>, tensor<?x3x5xf32>) {
  %y = fusion.exp %x : tensor<?x3x5xf32>
  %s = fusion.sum %x [1] : tensor<?x3x5xf32> -> tensor<?x5xf32>
  fusion.output %y, %s, %y : tensor<?x3x5xf32>, tensor<?x5xf32>, tensor<?x3x5xf32> stride_orders [array<i64: 0, 2, 1>, array<i64: 1, 0>, array<i64>]
}

// CHECK:      fusion.fusion @layouts(%x: tensor<?x3x5xf32>) -> (tensor<3x5x?xf32>, tensor<?x5xf32>, tensor<?x3x5xf32>) {
// CHECK-NEXT:   %y = fusion.exp %x : tensor<?x3x5xf32>
// CHECK-NEXT:   %s = fusion.sum %x [1] : tensor<?x3x5xf32> -> tensor<?x5xf32>
// CHECK-NEXT:   %y_1 = fusion.permute %y [1, 2, 0] : tensor<?x3x5xf32> -> tensor<3x5x?xf32>
// CHECK-NEXT:   fusion.output %y_1, %s, %y : tensor<3x5x?xf32>, tensor<?x5xf32>, tensor<?x3x5xf32>
// CHECK-NEXT: }
