// Reductions: sum/max/min/prod with and without keepdim, over one or several axes, on floats and
// integers; welford; var_mean with a correction and keepdim.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

fusion.fusion @basic(%x: tensor<?x3x127xf32>, %i: tensor<5x?xi32>, %l: tensor<?xi64>) -> (tensor<?x127xf32>, tensor<?x1x1xf32>, tensor<1x?xi32>, tensor<i64>, tensor<f32>, tensor<?x1x127xf32>, tensor<i64>) {
  %sum = fusion.sum %x [1] : tensor<?x3x127xf32> -> tensor<?x127xf32>
  %max = fusion.max %x [1, 2] keepdim : tensor<?x3x127xf32> -> tensor<?x1x1xf32>
  %min = fusion.min %i [0] keepdim : tensor<5x?xi32> -> tensor<1x?xi32>
  %all = fusion.sum %l [0] : tensor<?xi64> -> tensor<i64>
  %full = fusion.max %x [0, 1, 2] : tensor<?x3x127xf32> -> tensor<f32>
  %prod = fusion.prod %x [1] keepdim : tensor<?x3x127xf32> -> tensor<?x1x127xf32>
  %iprod = fusion.prod %l [0] : tensor<?xi64> -> tensor<i64>
  fusion.output %sum, %max, %min, %all, %full, %prod, %iprod : tensor<?x127xf32>, tensor<?x1x1xf32>, tensor<1x?xi32>, tensor<i64>, tensor<f32>, tensor<?x1x127xf32>, tensor<i64>
}

// CHECK-LABEL: fusion.fusion @basic
// CHECK-NEXT:    %sum = fusion.sum %x [1] : tensor<?x3x127xf32> -> tensor<?x127xf32>
// CHECK-NEXT:    %max = fusion.max %x [1, 2] keepdim : tensor<?x3x127xf32> -> tensor<?x1x1xf32>
// CHECK-NEXT:    %min = fusion.min %i [0] keepdim : tensor<5x?xi32> -> tensor<1x?xi32>
// CHECK-NEXT:    %all = fusion.sum %l [0] : tensor<?xi64> -> tensor<i64>
// CHECK-NEXT:    %full = fusion.max %x [0, 1, 2] : tensor<?x3x127xf32> -> tensor<f32>
// CHECK-NEXT:    %prod = fusion.prod %x [1] keepdim : tensor<?x3x127xf32> -> tensor<?x1x127xf32>
// CHECK-NEXT:    %iprod = fusion.prod %l [0] : tensor<?xi64> -> tensor<i64>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "basic"
// CHECK-GENERIC:         %sum = "fusion.sum"(%x) <{axes = array<i64: 1>}> : (tensor<?x3x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %max = "fusion.max"(%x) <{axes = array<i64: 1, 2>, keepdim}> : (tensor<?x3x127xf32>) -> tensor<?x1x1xf32>
// CHECK-GENERIC-NEXT:    %min = "fusion.min"(%i) <{axes = array<i64: 0>, keepdim}> : (tensor<5x?xi32>) -> tensor<1x?xi32>
// CHECK-GENERIC-NEXT:    %all = "fusion.sum"(%l) <{axes = array<i64: 0>}> : (tensor<?xi64>) -> tensor<i64>
// CHECK-GENERIC-NEXT:    %full = "fusion.max"(%x) <{axes = array<i64: 0, 1, 2>}> : (tensor<?x3x127xf32>) -> tensor<f32>
// CHECK-GENERIC-NEXT:    %prod = "fusion.prod"(%x) <{axes = array<i64: 1>, keepdim}> : (tensor<?x3x127xf32>) -> tensor<?x1x127xf32>
// CHECK-GENERIC-NEXT:    %iprod = "fusion.prod"(%l) <{axes = array<i64: 0>}> : (tensor<?xi64>) -> tensor<i64>

// A result may be more static than its operand (the reduced shape of `?` is compatible with 4).
fusion.fusion @refined(%x: tensor<?x?xf64>) -> (tensor<4xf64>) {
  %s = fusion.sum %x [1] : tensor<?x?xf64> -> tensor<4xf64>
  fusion.output %s : tensor<4xf64>
}

// CHECK-LABEL: fusion.fusion @refined
// CHECK-NEXT:    %s = fusion.sum %x [1] : tensor<?x?xf64> -> tensor<4xf64>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "refined"
// CHECK-GENERIC:         %s = "fusion.sum"(%x) <{axes = array<i64: 1>}> : (tensor<?x?xf64>) -> tensor<4xf64>

// welford: avg and var_sum keep the element type, count is i64.
fusion.fusion @welford(%x: tensor<?x?xf32>, %d: tensor<3x5x7xf64>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi64>, tensor<5xf64>) {
  %avg, %m2, %n = fusion.welford %x [1] : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?xi64>
  %davg, %dm2, %dn = fusion.welford %d [0, 2] : tensor<3x5x7xf64> -> tensor<5xf64>, tensor<5xf64>, tensor<5xi64>
  fusion.output %avg, %m2, %n, %dm2 : tensor<?xf32>, tensor<?xf32>, tensor<?xi64>, tensor<5xf64>
}

// CHECK-LABEL: fusion.fusion @welford
// CHECK-NEXT:    %avg, %m2, %n = fusion.welford %x [1] : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?xi64>
// CHECK-NEXT:    %davg, %dm2, %dn = fusion.welford %d [0, 2] : tensor<3x5x7xf64> -> tensor<5xf64>, tensor<5xf64>, tensor<5xi64>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "welford"
// CHECK-GENERIC:         %avg, %m2, %n = "fusion.welford"(%x) <{axes = array<i64: 1>}> : (tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xi64>)
// CHECK-GENERIC-NEXT:    %davg, %dm2, %dn = "fusion.welford"(%d) <{axes = array<i64: 0, 2>}> : (tensor<3x5x7xf64>) -> (tensor<5xf64>, tensor<5xf64>, tensor<5xi64>)

// var_mean: population (correction 0) and sample (correction 1) variance, with keepdim.
fusion.fusion @var_mean(%x: tensor<?x127xf32>, %d: tensor<2x3x4xf64>) -> (tensor<?xf32>, tensor<?xf32>, tensor<1x3x1xf64>, tensor<1x3x1xf64>) {
  %var, %mean = fusion.var_mean %x [1] correction(0) : tensor<?x127xf32> -> tensor<?xf32>, tensor<?xf32>
  %dvar, %dmean = fusion.var_mean %d [0, 2] correction(1) keepdim : tensor<2x3x4xf64> -> tensor<1x3x1xf64>, tensor<1x3x1xf64>
  fusion.output %var, %mean, %dvar, %dmean : tensor<?xf32>, tensor<?xf32>, tensor<1x3x1xf64>, tensor<1x3x1xf64>
}

// CHECK-LABEL: fusion.fusion @var_mean
// CHECK-NEXT:    %var, %mean = fusion.var_mean %x [1] correction(0) : tensor<?x127xf32> -> tensor<?xf32>, tensor<?xf32>
// CHECK-NEXT:    %dvar, %dmean = fusion.var_mean %d [0, 2] correction(1) keepdim : tensor<2x3x4xf64> -> tensor<1x3x1xf64>, tensor<1x3x1xf64>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "var_mean"
// CHECK-GENERIC:         %var, %mean = "fusion.var_mean"(%x) <{axes = array<i64: 1>, correction = 0 : i64}> : (tensor<?x127xf32>) -> (tensor<?xf32>, tensor<?xf32>)
// CHECK-GENERIC-NEXT:    %dvar, %dmean = "fusion.var_mean"(%d) <{axes = array<i64: 0, 2>, correction = 1 : i64, keepdim}> : (tensor<2x3x4xf64>) -> (tensor<1x3x1xf64>, tensor<1x3x1xf64>)

// partial_sum: the chunk sums of one axis (the first half of a reduction split across kernels),
// on the outer and the inner axis, static and dynamic, float and integer.
fusion.fusion @partial_sum(%x: tensor<?x?xf32>, %y: tensor<3x127xf64>, %i: tensor<?xi32>) -> (tensor<8x?xf32>, tensor<3x4xf64>, tensor<2xi32>) {
  %rows = fusion.partial_sum %x [0] splits(8) : tensor<?x?xf32> -> tensor<8x?xf32>
  %cols = fusion.partial_sum %y [1] splits(4) : tensor<3x127xf64> -> tensor<3x4xf64>
  %ints = fusion.partial_sum %i [0] splits(2) : tensor<?xi32> -> tensor<2xi32>
  fusion.output %rows, %cols, %ints : tensor<8x?xf32>, tensor<3x4xf64>, tensor<2xi32>
}

// CHECK-LABEL: fusion.fusion @partial_sum
// CHECK-NEXT:    %rows = fusion.partial_sum %x [0] splits(8) : tensor<?x?xf32> -> tensor<8x?xf32>
// CHECK-NEXT:    %cols = fusion.partial_sum %y [1] splits(4) : tensor<3x127xf64> -> tensor<3x4xf64>
// CHECK-NEXT:    %ints = fusion.partial_sum %i [0] splits(2) : tensor<?xi32> -> tensor<2xi32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "partial_sum"
// CHECK-GENERIC:         %rows = "fusion.partial_sum"(%x) <{axes = array<i64: 0>, splits = 8 : i64}> : (tensor<?x?xf32>) -> tensor<8x?xf32>
