// translate-welford{mode=always} rewrites every welford and var_mean into two plain passes:
// sum -> divide by the element count -> broadcast -> subtract -> square -> sum. The count is a
// scalar constant where the reduced extents are static, else the sum of a broadcast 1 : i64
// over the reduced axes; var_mean divides by max(N - correction, 0).
// RUN: fuser-opt %s --split-input-file -p 'translate-welford{mode=always}' | filecheck %s

fusion.fusion @var_mean(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %var, %mean = fusion.var_mean %x [1] correction(1) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  fusion.output %var, %mean : tensor<?xf32>, tensor<?xf32>
}

// CHECK-LABEL: fusion.fusion @var_mean
// CHECK-NEXT:    %x_sum = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:    %one = fusion.constant 1 : i64
// CHECK-NEXT:    %x_size0 = fusion.dim %x[0] : tensor<?x?xf32>
// CHECK-NEXT:    %x_size1 = fusion.dim %x[1] : tensor<?x?xf32>
// CHECK-NEXT:    %ones = fusion.broadcast_in_dim %one [] sizes(%x_size0, %x_size1) : i64 -> tensor<?x?xi64>
// CHECK-NEXT:    %x_count = fusion.sum %ones [1] : tensor<?x?xi64> -> tensor<?xi64>
// CHECK-NEXT:    %x_count_f = fusion.cast %x_count : tensor<?xi64> -> tensor<?xf32>
// CHECK-NEXT:    %mean = fusion.div %x_sum, %x_count_f : tensor<?xf32>
// CHECK-NEXT:    %mean_b = fusion.broadcast_in_dim %mean [0] sizes(%x_size1) : tensor<?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %x_dev = fusion.sub %x, %mean_b : tensor<?x?xf32>
// CHECK-NEXT:    %x_dev2 = fusion.mul %x_dev, %x_dev : tensor<?x?xf32>
// CHECK-NEXT:    %x_m2 = fusion.sum %x_dev2 [1] : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:    %correction = fusion.constant 1 : i64
// CHECK-NEXT:    %zero = fusion.constant 0 : i64
// CHECK-NEXT:    %dof_raw = fusion.sub %x_count, %correction : (tensor<?xi64>, i64) -> tensor<?xi64>
// CHECK-NEXT:    %dof = fusion.maximum %dof_raw, %zero : (tensor<?xi64>, i64) -> tensor<?xi64>
// CHECK-NEXT:    %dof_f = fusion.cast %dof : tensor<?xi64> -> tensor<?xf32>
// CHECK-NEXT:    %var = fusion.div %x_m2, %dof_f : tensor<?xf32>
// CHECK-NEXT:    fusion.output %var, %mean : tensor<?xf32>, tensor<?xf32>

// -----

// Static reduced extents: N = 8 * 6 = 48 is a constant, and welford's count a broadcast of it.
fusion.fusion @welford(%x: tensor<8x?x6xf64>) -> (tensor<?xf64>, tensor<?xf64>, tensor<?xi64>) {
  %avg, %m2, %n = fusion.welford %x [0, 2] : tensor<8x?x6xf64> -> tensor<?xf64>, tensor<?xf64>, tensor<?xi64>
  fusion.output %avg, %m2, %n : tensor<?xf64>, tensor<?xf64>, tensor<?xi64>
}

// CHECK-LABEL: fusion.fusion @welford
// CHECK-NEXT:    %x_sum = fusion.sum %x [0, 2] : tensor<8x?x6xf64> -> tensor<?xf64>
// CHECK-NEXT:    %x_count = fusion.constant 4.800000e+01 : f64
// CHECK-NEXT:    %avg = fusion.div %x_sum, %x_count : (tensor<?xf64>, f64) -> tensor<?xf64>
// CHECK-NEXT:    %avg_b = fusion.broadcast_in_dim %avg [1] : tensor<?xf64> -> tensor<8x?x6xf64>
// CHECK-NEXT:    %x_dev = fusion.sub %x, %avg_b : tensor<8x?x6xf64>
// CHECK-NEXT:    %x_dev2 = fusion.mul %x_dev, %x_dev : tensor<8x?x6xf64>
// CHECK-NEXT:    %m2 = fusion.sum %x_dev2 [0, 2] : tensor<8x?x6xf64> -> tensor<?xf64>
// CHECK-NEXT:    %x_n = fusion.constant 48 : i64
// CHECK-NEXT:    %x_size1 = fusion.dim %x[1] : tensor<8x?x6xf64>
// CHECK-NEXT:    %n = fusion.broadcast_in_dim %x_n [] sizes(%x_size1) : i64 -> tensor<?xi64>
// CHECK-NEXT:    fusion.output %avg, %m2, %n : tensor<?xf64>, tensor<?xf64>, tensor<?xi64>

// -----

// keepdim: the sums keep the reduced dim as 1, and the mean broadcasts back along it.
fusion.fusion @keepdim(%x: tensor<?x?xf32>) -> (tensor<1x?xf32>, tensor<1x?xf32>) {
  %var, %mean = fusion.var_mean %x [0] correction(0) keepdim : tensor<?x?xf32> -> tensor<1x?xf32>, tensor<1x?xf32>
  fusion.output %var, %mean : tensor<1x?xf32>, tensor<1x?xf32>
}

// CHECK-LABEL: fusion.fusion @keepdim
// CHECK-NEXT:    %x_sum = fusion.sum %x [0] keepdim : tensor<?x?xf32> -> tensor<1x?xf32>
// CHECK:         %x_count = fusion.sum %ones [0] keepdim : tensor<?x?xi64> -> tensor<1x?xi64>
// CHECK-NEXT:    %x_count_f = fusion.cast %x_count : tensor<1x?xi64> -> tensor<1x?xf32>
// CHECK-NEXT:    %mean = fusion.div %x_sum, %x_count_f : tensor<1x?xf32>
// CHECK-NEXT:    %mean_b = fusion.broadcast_in_dim %mean [0, 1] sizes(%x_size0) : tensor<1x?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %x_dev = fusion.sub %x, %mean_b : tensor<?x?xf32>
// CHECK-NEXT:    %x_dev2 = fusion.mul %x_dev, %x_dev : tensor<?x?xf32>
// CHECK-NEXT:    %x_m2 = fusion.sum %x_dev2 [0] keepdim : tensor<?x?xf32> -> tensor<1x?xf32>
// CHECK-NEXT:    %var = fusion.div %x_m2, %x_count_f : tensor<1x?xf32>
// CHECK-NEXT:    fusion.output %var, %mean : tensor<1x?xf32>, tensor<1x?xf32>
