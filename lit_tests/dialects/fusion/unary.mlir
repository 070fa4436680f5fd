// Unary pointwise ops: float-only ops on f32/f64 tensors and scalars, numeric ops (neg, abs,
// relu) also on i32/i64, gelu with both approximations.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// Every float-only unary op, chained on a tensor with a dynamic dim.
fusion.fusion @float_chain(%x: tensor<?x127xf32>) -> (tensor<?x127xf32>) {
  %exp = fusion.exp %x : tensor<?x127xf32>
  %log = fusion.log %exp : tensor<?x127xf32>
  %sqrt = fusion.sqrt %log : tensor<?x127xf32>
  %rsqrt = fusion.rsqrt %sqrt : tensor<?x127xf32>
  %reciprocal = fusion.reciprocal %rsqrt : tensor<?x127xf32>
  %sin = fusion.sin %reciprocal : tensor<?x127xf32>
  %cos = fusion.cos %sin : tensor<?x127xf32>
  %tanh = fusion.tanh %cos : tensor<?x127xf32>
  %sigmoid = fusion.sigmoid %tanh : tensor<?x127xf32>
  %erf = fusion.erf %sigmoid : tensor<?x127xf32>
  %silu = fusion.silu %erf : tensor<?x127xf32>
  fusion.output %silu : tensor<?x127xf32>
}

// CHECK-LABEL: fusion.fusion @float_chain(%x: tensor<?x127xf32>) -> tensor<?x127xf32> {
// CHECK-NEXT:    %exp = fusion.exp %x : tensor<?x127xf32>
// CHECK-NEXT:    %log = fusion.log %exp : tensor<?x127xf32>
// CHECK-NEXT:    %sqrt = fusion.sqrt %log : tensor<?x127xf32>
// CHECK-NEXT:    %rsqrt = fusion.rsqrt %sqrt : tensor<?x127xf32>
// CHECK-NEXT:    %reciprocal = fusion.reciprocal %rsqrt : tensor<?x127xf32>
// CHECK-NEXT:    %sin = fusion.sin %reciprocal : tensor<?x127xf32>
// CHECK-NEXT:    %cos = fusion.cos %sin : tensor<?x127xf32>
// CHECK-NEXT:    %tanh = fusion.tanh %cos : tensor<?x127xf32>
// CHECK-NEXT:    %sigmoid = fusion.sigmoid %tanh : tensor<?x127xf32>
// CHECK-NEXT:    %erf = fusion.erf %sigmoid : tensor<?x127xf32>
// CHECK-NEXT:    %silu = fusion.silu %erf : tensor<?x127xf32>
// CHECK-NEXT:    fusion.output %silu : tensor<?x127xf32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "float_chain", function_type = (tensor<?x127xf32>) -> tensor<?x127xf32>}> ({
// CHECK-GENERIC-NEXT:    ^bb0(%x: tensor<?x127xf32>):
// CHECK-GENERIC-NEXT:    %exp = "fusion.exp"(%x) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %log = "fusion.log"(%exp) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %sqrt = "fusion.sqrt"(%log) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %rsqrt = "fusion.rsqrt"(%sqrt) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %reciprocal = "fusion.reciprocal"(%rsqrt) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %sin = "fusion.sin"(%reciprocal) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %cos = "fusion.cos"(%sin) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %tanh = "fusion.tanh"(%cos) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %sigmoid = "fusion.sigmoid"(%tanh) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %erf = "fusion.erf"(%sigmoid) : (tensor<?x127xf32>) -> tensor<?x127xf32>
// CHECK-GENERIC-NEXT:    %silu = "fusion.silu"(%erf) : (tensor<?x127xf32>) -> tensor<?x127xf32>

// Float-only ops on f64 scalars, and the result broadcast to an output.
fusion.fusion @f64_scalars(%s: f64) -> (tensor<1xf64>) {
  %e = fusion.exp %s : f64
  %r = fusion.rsqrt %e : f64
  %t = fusion.tanh %r : f64
  %b = fusion.broadcast_in_dim %t [] : f64 -> tensor<1xf64>
  fusion.output %b : tensor<1xf64>
}

// CHECK-LABEL: fusion.fusion @f64_scalars(%s: f64) -> tensor<1xf64> {
// CHECK-NEXT:    %e = fusion.exp %s : f64
// CHECK-NEXT:    %r = fusion.rsqrt %e : f64
// CHECK-NEXT:    %t = fusion.tanh %r : f64

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "f64_scalars", function_type = (f64) -> tensor<1xf64>}> ({
// CHECK-GENERIC:         %e = "fusion.exp"(%s) : (f64) -> f64
// CHECK-GENERIC-NEXT:    %r = "fusion.rsqrt"(%e) : (f64) -> f64
// CHECK-GENERIC-NEXT:    %t = "fusion.tanh"(%r) : (f64) -> f64

// neg, abs and relu on every numeric element type.
fusion.fusion @numeric(%f32: tensor<3xf32>, %f64: tensor<1x?xf64>, %i32: tensor<127xi32>, %i64: i64) -> (tensor<3xf32>, tensor<1x?xf64>, tensor<127xi32>) {
  %neg_f32 = fusion.neg %f32 : tensor<3xf32>
  %abs_f32 = fusion.abs %neg_f32 : tensor<3xf32>
  %relu_f32 = fusion.relu %abs_f32 : tensor<3xf32>
  %neg_f64 = fusion.neg %f64 : tensor<1x?xf64>
  %abs_f64 = fusion.abs %neg_f64 : tensor<1x?xf64>
  %relu_f64 = fusion.relu %abs_f64 : tensor<1x?xf64>
  %neg_i32 = fusion.neg %i32 : tensor<127xi32>
  %abs_i32 = fusion.abs %neg_i32 : tensor<127xi32>
  %relu_i32 = fusion.relu %abs_i32 : tensor<127xi32>
  %neg_i64 = fusion.neg %i64 : i64
  %abs_i64 = fusion.abs %neg_i64 : i64
  %relu_i64 = fusion.relu %abs_i64 : i64
  fusion.output %relu_f32, %relu_f64, %relu_i32 : tensor<3xf32>, tensor<1x?xf64>, tensor<127xi32>
}

// CHECK-LABEL: fusion.fusion @numeric(%f32: tensor<3xf32>, %f64: tensor<1x?xf64>, %i32: tensor<127xi32>, %i64: i64) -> (tensor<3xf32>, tensor<1x?xf64>, tensor<127xi32>) {
// CHECK-NEXT:    %neg_f32 = fusion.neg %f32 : tensor<3xf32>
// CHECK-NEXT:    %abs_f32 = fusion.abs %neg_f32 : tensor<3xf32>
// CHECK-NEXT:    %relu_f32 = fusion.relu %abs_f32 : tensor<3xf32>
// CHECK-NEXT:    %neg_f64 = fusion.neg %f64 : tensor<1x?xf64>
// CHECK-NEXT:    %abs_f64 = fusion.abs %neg_f64 : tensor<1x?xf64>
// CHECK-NEXT:    %relu_f64 = fusion.relu %abs_f64 : tensor<1x?xf64>
// CHECK-NEXT:    %neg_i32 = fusion.neg %i32 : tensor<127xi32>
// CHECK-NEXT:    %abs_i32 = fusion.abs %neg_i32 : tensor<127xi32>
// CHECK-NEXT:    %relu_i32 = fusion.relu %abs_i32 : tensor<127xi32>
// CHECK-NEXT:    %neg_i64 = fusion.neg %i64 : i64
// CHECK-NEXT:    %abs_i64 = fusion.abs %neg_i64 : i64
// CHECK-NEXT:    %relu_i64 = fusion.relu %abs_i64 : i64
// CHECK-NEXT:    fusion.output %relu_f32, %relu_f64, %relu_i32 : tensor<3xf32>, tensor<1x?xf64>, tensor<127xi32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "numeric", function_type = (tensor<3xf32>, tensor<1x?xf64>, tensor<127xi32>, i64) -> (tensor<3xf32>, tensor<1x?xf64>, tensor<127xi32>)}> ({
// CHECK-GENERIC-NEXT:    ^bb0(%f32: tensor<3xf32>, %f64: tensor<1x?xf64>, %i32: tensor<127xi32>, %i64: i64):
// CHECK-GENERIC-NEXT:    %neg_f32 = "fusion.neg"(%f32) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-GENERIC-NEXT:    %abs_f32 = "fusion.abs"(%neg_f32) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-GENERIC-NEXT:    %relu_f32 = "fusion.relu"(%abs_f32) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-GENERIC-NEXT:    %neg_f64 = "fusion.neg"(%f64) : (tensor<1x?xf64>) -> tensor<1x?xf64>
// CHECK-GENERIC-NEXT:    %abs_f64 = "fusion.abs"(%neg_f64) : (tensor<1x?xf64>) -> tensor<1x?xf64>
// CHECK-GENERIC-NEXT:    %relu_f64 = "fusion.relu"(%abs_f64) : (tensor<1x?xf64>) -> tensor<1x?xf64>
// CHECK-GENERIC-NEXT:    %neg_i32 = "fusion.neg"(%i32) : (tensor<127xi32>) -> tensor<127xi32>
// CHECK-GENERIC-NEXT:    %abs_i32 = "fusion.abs"(%neg_i32) : (tensor<127xi32>) -> tensor<127xi32>
// CHECK-GENERIC-NEXT:    %relu_i32 = "fusion.relu"(%abs_i32) : (tensor<127xi32>) -> tensor<127xi32>
// CHECK-GENERIC-NEXT:    %neg_i64 = "fusion.neg"(%i64) : (i64) -> i64
// CHECK-GENERIC-NEXT:    %abs_i64 = "fusion.abs"(%neg_i64) : (i64) -> i64
// CHECK-GENERIC-NEXT:    %relu_i64 = "fusion.relu"(%abs_i64) : (i64) -> i64

// gelu, exact and with the tanh approximation; the approximation is a property.
fusion.fusion @gelu(%x: tensor<?x?xf32>, %s: f64) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %exact = fusion.gelu %x none : tensor<?x?xf32>
  %approx = fusion.gelu %x tanh : tensor<?x?xf32>
  %scalar = fusion.gelu %s tanh : f64
  fusion.output %exact, %approx : tensor<?x?xf32>, tensor<?x?xf32>
}

// CHECK-LABEL: fusion.fusion @gelu(%x: tensor<?x?xf32>, %s: f64) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
// CHECK-NEXT:    %exact = fusion.gelu %x none : tensor<?x?xf32>
// CHECK-NEXT:    %approx = fusion.gelu %x tanh : tensor<?x?xf32>
// CHECK-NEXT:    %scalar = fusion.gelu %s tanh : f64

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "gelu", function_type = (tensor<?x?xf32>, f64) -> (tensor<?x?xf32>, tensor<?x?xf32>)}> ({
// CHECK-GENERIC:         %exact = "fusion.gelu"(%x) <{approximate = #fusion<approximation none>}> : (tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-GENERIC-NEXT:    %approx = "fusion.gelu"(%x) <{approximate = #fusion<approximation tanh>}> : (tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-GENERIC-NEXT:    %scalar = "fusion.gelu"(%s) <{approximate = #fusion<approximation tanh>}> : (f64) -> f64
