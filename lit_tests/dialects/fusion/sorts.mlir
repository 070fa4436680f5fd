// fusion.topk (values and i64 indices, k along the dim) and fusion.argsort (i64 indices of the
// operand's shape), ascending or not.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP

fusion.fusion @sorts(%x: tensor<?x?xf32>, %i: tensor<4x9xi32>) -> (tensor<?x5xf32>, tensor<?x5xi64>, tensor<4x2xi32>, tensor<4x2xi64>, tensor<4x9xi64>, tensor<?x?xi64>) {
  %v, %j = fusion.topk %x along 1 k(5) largest : tensor<?x?xf32> -> tensor<?x5xf32>, tensor<?x5xi64>
  %w, %k = fusion.topk %i along 1 k(2) : tensor<4x9xi32> -> tensor<4x2xi32>, tensor<4x2xi64>
  %a = fusion.argsort %i along 0 descending : tensor<4x9xi32> -> tensor<4x9xi64>
  %b = fusion.argsort %x along 1 : tensor<?x?xf32> -> tensor<?x?xi64>
  fusion.output %v, %j, %w, %k, %a, %b : tensor<?x5xf32>, tensor<?x5xi64>, tensor<4x2xi32>, tensor<4x2xi64>, tensor<4x9xi64>, tensor<?x?xi64>
}

// CHECK-LABEL: fusion.fusion @sorts
// CHECK-NEXT:    %v, %j = fusion.topk %x along 1 k(5) largest : tensor<?x?xf32> -> tensor<?x5xf32>, tensor<?x5xi64>
// CHECK-NEXT:    %w, %k = fusion.topk %i along 1 k(2) : tensor<4x9xi32> -> tensor<4x2xi32>, tensor<4x2xi64>
// CHECK-NEXT:    %a = fusion.argsort %i along 0 descending : tensor<4x9xi32> -> tensor<4x9xi64>
// CHECK-NEXT:    %b = fusion.argsort %x along 1 : tensor<?x?xf32> -> tensor<?x?xi64>
