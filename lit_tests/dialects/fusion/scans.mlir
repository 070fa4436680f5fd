// fusion.cumsum, cumprod, cummax and cummin: inclusive scans along one dim; the result has the
// operand's type.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP

fusion.fusion @scans(%x: tensor<?x?xf32>, %i: tensor<4x?xi64>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<4x?xi64>, tensor<4x?xi64>) {
  %s = fusion.cumsum %x along 1 : tensor<?x?xf32>
  %p = fusion.cumprod %x along 0 : tensor<?x?xf32>
  %m = fusion.cummax %i along 1 : tensor<4x?xi64>
  %n = fusion.cummin %i along 0 : tensor<4x?xi64>
  fusion.output %s, %p, %m, %n : tensor<?x?xf32>, tensor<?x?xf32>, tensor<4x?xi64>, tensor<4x?xi64>
}

// CHECK-LABEL: fusion.fusion @scans
// CHECK-NEXT:    %s = fusion.cumsum %x along 1 : tensor<?x?xf32>
// CHECK-NEXT:    %p = fusion.cumprod %x along 0 : tensor<?x?xf32>
// CHECK-NEXT:    %m = fusion.cummax %i along 1 : tensor<4x?xi64>
// CHECK-NEXT:    %n = fusion.cummin %i along 0 : tensor<4x?xi64>
