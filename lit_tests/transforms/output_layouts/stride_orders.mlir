// fuser-output-layouts: an output with a stride order becomes the row-major tensor of its dims
// taken outermost first (a fusion.permute the kernels write); fd.execute hands it back through
// the inverse permutation. An output that is an input (or a view of one) is copied first
// (fusion.set): asked for a layout, it is a tensor of its own. A computed output in row-major
// order, and one without an order, are left alone.
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

fusion.fusion @input_out(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x4xf32>) {
  %t = fusion.permute %x [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
  fusion.output %x, %t : tensor<4x6xf32>, tensor<6x4xf32> stride_orders [array<i64: 0, 1>, array<i64: 1, 0>]
}

// CHECK:      fusion.fusion @input_out(%x: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<6x4xf32>) {
// CHECK-NEXT:   %t = fusion.permute %x [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
// CHECK-NEXT:   %x_1 = fusion.set %x : tensor<4x6xf32>
// CHECK-NEXT:   %x_2 = fusion.permute %x_1 [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
// CHECK-NEXT:   %t_1 = fusion.set %t : tensor<6x4xf32>
// CHECK-NEXT:   fusion.output %x_2, %t_1 : tensor<6x4xf32>, tensor<6x4xf32>
// CHECK-NEXT: }
