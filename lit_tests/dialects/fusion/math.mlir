// The math of nvFuser's op set beyond the basics: float functions, rounding and sign on floats
// and integers, tests with i1 results, bitwise ops, and the binary functions.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP

// Every float function, chained on a tensor with a dynamic dim.
fusion.fusion @float_chain(%x: tensor<?x3xf32>) -> (tensor<?x3xf32>) {
  %acos = fusion.acos %x : tensor<?x3xf32>
  %acosh = fusion.acosh %acos : tensor<?x3xf32>
  %asin = fusion.asin %acosh : tensor<?x3xf32>
  %asinh = fusion.asinh %asin : tensor<?x3xf32>
  %atan = fusion.atan %asinh : tensor<?x3xf32>
  %atanh = fusion.atanh %atan : tensor<?x3xf32>
  %cosh = fusion.cosh %atanh : tensor<?x3xf32>
  %sinh = fusion.sinh %cosh : tensor<?x3xf32>
  %tan = fusion.tan %sinh : tensor<?x3xf32>
  %erfc = fusion.erfc %tan : tensor<?x3xf32>
  %erfinv = fusion.erfinv %erfc : tensor<?x3xf32>
  %erfcinv = fusion.erfcinv %erfinv : tensor<?x3xf32>
  %exp2 = fusion.exp2 %erfcinv : tensor<?x3xf32>
  %expm1 = fusion.expm1 %exp2 : tensor<?x3xf32>
  %log10 = fusion.log10 %expm1 : tensor<?x3xf32>
  %log1p = fusion.log1p %log10 : tensor<?x3xf32>
  %log2 = fusion.log2 %log1p : tensor<?x3xf32>
  %lgamma = fusion.lgamma %log2 : tensor<?x3xf32>
  %frac = fusion.frac %lgamma : tensor<?x3xf32>
  fusion.output %frac : tensor<?x3xf32>
}

// CHECK-LABEL: fusion.fusion @float_chain(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
// CHECK-NEXT:    %acos = fusion.acos %x : tensor<?x3xf32>
// CHECK-NEXT:    %acosh = fusion.acosh %acos : tensor<?x3xf32>
// CHECK-NEXT:    %asin = fusion.asin %acosh : tensor<?x3xf32>
// CHECK-NEXT:    %asinh = fusion.asinh %asin : tensor<?x3xf32>
// CHECK-NEXT:    %atan = fusion.atan %asinh : tensor<?x3xf32>
// CHECK-NEXT:    %atanh = fusion.atanh %atan : tensor<?x3xf32>
// CHECK-NEXT:    %cosh = fusion.cosh %atanh : tensor<?x3xf32>
// CHECK-NEXT:    %sinh = fusion.sinh %cosh : tensor<?x3xf32>
// CHECK-NEXT:    %tan = fusion.tan %sinh : tensor<?x3xf32>
// CHECK-NEXT:    %erfc = fusion.erfc %tan : tensor<?x3xf32>
// CHECK-NEXT:    %erfinv = fusion.erfinv %erfc : tensor<?x3xf32>
// CHECK-NEXT:    %erfcinv = fusion.erfcinv %erfinv : tensor<?x3xf32>
// CHECK-NEXT:    %exp2 = fusion.exp2 %erfcinv : tensor<?x3xf32>
// CHECK-NEXT:    %expm1 = fusion.expm1 %exp2 : tensor<?x3xf32>
// CHECK-NEXT:    %log10 = fusion.log10 %expm1 : tensor<?x3xf32>
// CHECK-NEXT:    %log1p = fusion.log1p %log10 : tensor<?x3xf32>
// CHECK-NEXT:    %log2 = fusion.log2 %log1p : tensor<?x3xf32>
// CHECK-NEXT:    %lgamma = fusion.lgamma %log2 : tensor<?x3xf32>
// CHECK-NEXT:    %frac = fusion.frac %lgamma : tensor<?x3xf32>
// CHECK-NEXT:    fusion.output %frac : tensor<?x3xf32>

// -----

// Rounding and sign keep their operand's type, integers included; tests give i1.
fusion.fusion @rounding_and_tests(%f: tensor<5xf64>, %i: tensor<5xi32>, %s: i64) -> (tensor<5xi1>, tensor<5xi1>) {
  %ceil = fusion.ceil %f : tensor<5xf64>
  %floor = fusion.floor %ceil : tensor<5xf64>
  %round = fusion.round %floor : tensor<5xf64>
  %trunc = fusion.trunc %round : tensor<5xf64>
  %sign = fusion.sign %trunc : tensor<5xf64>
  %iround = fusion.round %i : tensor<5xi32>
  %isign = fusion.sign %s : i64
  %finite = fusion.isfinite %sign : tensor<5xf64> -> tensor<5xi1>
  %inf = fusion.isinf %f : tensor<5xf64> -> tensor<5xi1>
  %nan = fusion.isnan %f : tensor<5xf64> -> tensor<5xi1>
  %neginf = fusion.isneginf %f : tensor<5xf64> -> tensor<5xi1>
  %posinf = fusion.isposinf %f : tensor<5xf64> -> tensor<5xi1>
  %signbit = fusion.signbit %iround : tensor<5xi32> -> tensor<5xi1>
  %scalar = fusion.isnan %isign : i64 -> i1
  %not = fusion.bitwise_not %signbit : tensor<5xi1>
  fusion.output %finite, %not : tensor<5xi1>, tensor<5xi1>
}

// CHECK-LABEL: fusion.fusion @rounding_and_tests
// CHECK-NEXT:    %ceil = fusion.ceil %f : tensor<5xf64>
// CHECK-NEXT:    %floor = fusion.floor %ceil : tensor<5xf64>
// CHECK-NEXT:    %round = fusion.round %floor : tensor<5xf64>
// CHECK-NEXT:    %trunc = fusion.trunc %round : tensor<5xf64>
// CHECK-NEXT:    %sign = fusion.sign %trunc : tensor<5xf64>
// CHECK-NEXT:    %iround = fusion.round %i : tensor<5xi32>
// CHECK-NEXT:    %isign = fusion.sign %s : i64
// CHECK-NEXT:    %finite = fusion.isfinite %sign : tensor<5xf64> -> tensor<5xi1>
// CHECK-NEXT:    %inf = fusion.isinf %f : tensor<5xf64> -> tensor<5xi1>
// CHECK-NEXT:    %nan = fusion.isnan %f : tensor<5xf64> -> tensor<5xi1>
// CHECK-NEXT:    %neginf = fusion.isneginf %f : tensor<5xf64> -> tensor<5xi1>
// CHECK-NEXT:    %posinf = fusion.isposinf %f : tensor<5xf64> -> tensor<5xi1>
// CHECK-NEXT:    %signbit = fusion.signbit %iround : tensor<5xi32> -> tensor<5xi1>
// CHECK-NEXT:    %scalar = fusion.isnan %isign : i64 -> i1
// CHECK-NEXT:    %not = fusion.bitwise_not %signbit : tensor<5xi1>

// -----

// The binary functions: floats, integers, bitwise on i1.
fusion.fusion @binary(%a: tensor<?xf32>, %b: f32, %i: tensor<?xi64>, %j: tensor<?xi64>, %p: tensor<?xi1>) -> (tensor<?xf32>, tensor<?xi64>, tensor<?xi1>) {
  %atan2 = fusion.atan2 %a, %b : (tensor<?xf32>, f32) -> tensor<?xf32>
  %next = fusion.nextafter %atan2, %a : tensor<?xf32>
  %fmod = fusion.fmod %next, %a : tensor<?xf32>
  %rem = fusion.remainder %fmod, %b : (tensor<?xf32>, f32) -> tensor<?xf32>
  %irem = fusion.remainder %i, %j : tensor<?xi64>
  %gcd = fusion.gcd %irem, %j : tensor<?xi64>
  %and = fusion.bitwise_and %gcd, %j : tensor<?xi64>
  %or = fusion.bitwise_or %and, %j : tensor<?xi64>
  %xor = fusion.bitwise_xor %or, %j : tensor<?xi64>
  %shl = fusion.bitwise_left_shift %xor, %j : tensor<?xi64>
  %shr = fusion.bitwise_right_shift %shl, %j : tensor<?xi64>
  %lshr = fusion.logical_right_shift %shr, %j : tensor<?xi64>
  %pq = fusion.bitwise_xor %p, %p : tensor<?xi1>
  fusion.output %rem, %lshr, %pq : tensor<?xf32>, tensor<?xi64>, tensor<?xi1>
}

// CHECK-LABEL: fusion.fusion @binary
// CHECK-NEXT:    %atan2 = fusion.atan2 %a, %b : (tensor<?xf32>, f32) -> tensor<?xf32>
// CHECK-NEXT:    %next = fusion.nextafter %atan2, %a : tensor<?xf32>
// CHECK-NEXT:    %fmod = fusion.fmod %next, %a : tensor<?xf32>
// CHECK-NEXT:    %rem = fusion.remainder %fmod, %b : (tensor<?xf32>, f32) -> tensor<?xf32>
// CHECK-NEXT:    %irem = fusion.remainder %i, %j : tensor<?xi64>
// CHECK-NEXT:    %gcd = fusion.gcd %irem, %j : tensor<?xi64>
// CHECK-NEXT:    %and = fusion.bitwise_and %gcd, %j : tensor<?xi64>
// CHECK-NEXT:    %or = fusion.bitwise_or %and, %j : tensor<?xi64>
// CHECK-NEXT:    %xor = fusion.bitwise_xor %or, %j : tensor<?xi64>
// CHECK-NEXT:    %shl = fusion.bitwise_left_shift %xor, %j : tensor<?xi64>
// CHECK-NEXT:    %shr = fusion.bitwise_right_shift %shl, %j : tensor<?xi64>
// CHECK-NEXT:    %lshr = fusion.logical_right_shift %shr, %j : tensor<?xi64>
// CHECK-NEXT:    %pq = fusion.bitwise_xor %p, %p : tensor<?xi1>
