// Binary pointwise ops (arithmetic, comparisons), where, and scalars mixed with tensors.
// The short type form `: T` is used when both operands and the result share T, the functional
// form `: (Ta, Tb) -> Tr` otherwise.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// Every arithmetic op on f32 tensors with a dynamic dim.
fusion.fusion @arith_f32(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>) -> (tensor<?x3xf32>) {
  %add = fusion.add %a, %b : tensor<?x3xf32>
  %sub = fusion.sub %add, %b : tensor<?x3xf32>
  %mul = fusion.mul %sub, %a : tensor<?x3xf32>
  %div = fusion.div %mul, %b : tensor<?x3xf32>
  %pow = fusion.pow %div, %a : tensor<?x3xf32>
  %max = fusion.maximum %pow, %b : tensor<?x3xf32>
  %min = fusion.minimum %max, %a : tensor<?x3xf32>
  fusion.output %min : tensor<?x3xf32>
}

// CHECK-LABEL: fusion.fusion @arith_f32(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>) -> tensor<?x3xf32> {
// CHECK-NEXT:    %add = fusion.add %a, %b : tensor<?x3xf32>
// CHECK-NEXT:    %sub = fusion.sub %add, %b : tensor<?x3xf32>
// CHECK-NEXT:    %mul = fusion.mul %sub, %a : tensor<?x3xf32>
// CHECK-NEXT:    %div = fusion.div %mul, %b : tensor<?x3xf32>
// CHECK-NEXT:    %pow = fusion.pow %div, %a : tensor<?x3xf32>
// CHECK-NEXT:    %max = fusion.maximum %pow, %b : tensor<?x3xf32>
// CHECK-NEXT:    %min = fusion.minimum %max, %a : tensor<?x3xf32>
// CHECK-NEXT:    fusion.output %min : tensor<?x3xf32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "arith_f32", function_type = (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>}> ({
// CHECK-GENERIC-NEXT:    ^bb0(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>):
// CHECK-GENERIC-NEXT:    %add = "fusion.add"(%a, %b) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %sub = "fusion.sub"(%add, %b) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %mul = "fusion.mul"(%sub, %a) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %div = "fusion.div"(%mul, %b) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %pow = "fusion.pow"(%div, %a) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %max = "fusion.maximum"(%pow, %b) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %min = "fusion.minimum"(%max, %a) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>

// Integer arithmetic (pow is float-only) on i32 and i64, and f64.
fusion.fusion @arith_int(%i: tensor<127xi32>, %l: tensor<1x?xi64>, %d: tensor<3xf64>) -> (tensor<127xi32>, tensor<1x?xi64>, tensor<3xf64>) {
  %idiv = fusion.div %i, %i : tensor<127xi32>
  %imax = fusion.maximum %idiv, %i : tensor<127xi32>
  %lsub = fusion.sub %l, %l : tensor<1x?xi64>
  %lmin = fusion.minimum %lsub, %l : tensor<1x?xi64>
  %dpow = fusion.pow %d, %d : tensor<3xf64>
  fusion.output %imax, %lmin, %dpow : tensor<127xi32>, tensor<1x?xi64>, tensor<3xf64>
}

// CHECK-LABEL: fusion.fusion @arith_int
// CHECK-NEXT:    %idiv = fusion.div %i, %i : tensor<127xi32>
// CHECK-NEXT:    %imax = fusion.maximum %idiv, %i : tensor<127xi32>
// CHECK-NEXT:    %lsub = fusion.sub %l, %l : tensor<1x?xi64>
// CHECK-NEXT:    %lmin = fusion.minimum %lsub, %l : tensor<1x?xi64>
// CHECK-NEXT:    %dpow = fusion.pow %d, %d : tensor<3xf64>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "arith_int"
// CHECK-GENERIC:         %idiv = "fusion.div"(%i, %i) : (tensor<127xi32>, tensor<127xi32>) -> tensor<127xi32>
// CHECK-GENERIC:         %dpow = "fusion.pow"(%d, %d) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>

// Scalars mixed with tensors (either side), scalars with scalars, dynamic dims refined to
// static ones by a static operand, and a discardable attribute on a custom-syntax op.
fusion.fusion @mixed(%x: tensor<?x3xf32>, %y: tensor<4x?xf32>, %s: f32, %t: f32) -> (tensor<4x3xf32>, tensor<?x3xf32>) {
  %st = fusion.mul %s, %t : f32
  %xs = fusion.add %x, %st : (tensor<?x3xf32>, f32) -> tensor<?x3xf32>
  %sx = fusion.sub %s, %xs : (f32, tensor<?x3xf32>) -> tensor<?x3xf32>
  %xy = fusion.mul %sx, %y {tag = "refined"} : (tensor<?x3xf32>, tensor<4x?xf32>) -> tensor<4x3xf32>
  fusion.output %xy, %sx : tensor<4x3xf32>, tensor<?x3xf32>
}

// CHECK-LABEL: fusion.fusion @mixed(%x: tensor<?x3xf32>, %y: tensor<4x?xf32>, %s: f32, %t: f32) -> (tensor<4x3xf32>, tensor<?x3xf32>) {
// CHECK-NEXT:    %st = fusion.mul %s, %t : f32
// CHECK-NEXT:    %xs = fusion.add %x, %st : (tensor<?x3xf32>, f32) -> tensor<?x3xf32>
// CHECK-NEXT:    %sx = fusion.sub %s, %xs : (f32, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %xy = fusion.mul %sx, %y {tag = "refined"} : (tensor<?x3xf32>, tensor<4x?xf32>) -> tensor<4x3xf32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "mixed"
// CHECK-GENERIC:         %st = "fusion.mul"(%s, %t) : (f32, f32) -> f32
// CHECK-GENERIC-NEXT:    %xs = "fusion.add"(%x, %st) : (tensor<?x3xf32>, f32) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %sx = "fusion.sub"(%s, %xs) : (f32, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %xy = "fusion.mul"(%sx, %y) {tag = "refined"} : (tensor<?x3xf32>, tensor<4x?xf32>) -> tensor<4x3xf32>

// Every comparison: numeric operands (tensor or scalar), an i1 result; eq/ne also on i1.
fusion.fusion @compare(%a: tensor<?xf32>, %b: tensor<?xf32>, %i: tensor<5xi32>, %k: i32, %l: i64) -> (tensor<?xi1>, tensor<5xi1>) {
  %eq = fusion.eq %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>
  %ne = fusion.ne %eq, %eq : (tensor<?xi1>, tensor<?xi1>) -> tensor<?xi1>
  %lt = fusion.lt %i, %k : (tensor<5xi32>, i32) -> tensor<5xi1>
  %le = fusion.le %k, %i : (i32, tensor<5xi32>) -> tensor<5xi1>
  %gt = fusion.gt %l, %l : (i64, i64) -> i1
  %ge = fusion.ge %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>
  fusion.output %ne, %le : tensor<?xi1>, tensor<5xi1>
}

// CHECK-LABEL: fusion.fusion @compare
// CHECK-NEXT:    %eq = fusion.eq %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>
// CHECK-NEXT:    %ne = fusion.ne %eq, %eq : tensor<?xi1>
// CHECK-NEXT:    %lt = fusion.lt %i, %k : (tensor<5xi32>, i32) -> tensor<5xi1>
// CHECK-NEXT:    %le = fusion.le %k, %i : (i32, tensor<5xi32>) -> tensor<5xi1>
// CHECK-NEXT:    %gt = fusion.gt %l, %l : (i64, i64) -> i1
// CHECK-NEXT:    %ge = fusion.ge %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "compare"
// CHECK-GENERIC:         %eq = "fusion.eq"(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>
// CHECK-GENERIC-NEXT:    %ne = "fusion.ne"(%eq, %eq) : (tensor<?xi1>, tensor<?xi1>) -> tensor<?xi1>
// CHECK-GENERIC-NEXT:    %lt = "fusion.lt"(%i, %k) : (tensor<5xi32>, i32) -> tensor<5xi1>
// CHECK-GENERIC-NEXT:    %le = "fusion.le"(%k, %i) : (i32, tensor<5xi32>) -> tensor<5xi1>
// CHECK-GENERIC-NEXT:    %gt = "fusion.gt"(%l, %l) : (i64, i64) -> i1
// CHECK-GENERIC-NEXT:    %ge = "fusion.ge"(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>

// where: a tensor or scalar condition, tensor or scalar branches, storage types allowed.
fusion.fusion @where(%c: tensor<?x3xi1>, %x: tensor<?x3xbf16>, %y: tensor<?x3xbf16>, %z: bf16, %p: i1, %f: f32, %g: f32) -> (tensor<?x3xbf16>, tensor<?x3xbf16>, tensor<?x3xbf16>) {
  %w = fusion.where %c, %x, %y : (tensor<?x3xi1>, tensor<?x3xbf16>, tensor<?x3xbf16>) -> tensor<?x3xbf16>
  %ws = fusion.where %c, %x, %z : (tensor<?x3xi1>, tensor<?x3xbf16>, bf16) -> tensor<?x3xbf16>
  %wc = fusion.where %p, %z, %y : (i1, bf16, tensor<?x3xbf16>) -> tensor<?x3xbf16>
  %wss = fusion.where %p, %f, %g : (i1, f32, f32) -> f32
  %wb = fusion.where %p, %p, %p : i1
  fusion.output %w, %ws, %wc : tensor<?x3xbf16>, tensor<?x3xbf16>, tensor<?x3xbf16>
}

// CHECK-LABEL: fusion.fusion @where
// CHECK-NEXT:    %w = fusion.where %c, %x, %y : (tensor<?x3xi1>, tensor<?x3xbf16>, tensor<?x3xbf16>) -> tensor<?x3xbf16>
// CHECK-NEXT:    %ws = fusion.where %c, %x, %z : (tensor<?x3xi1>, tensor<?x3xbf16>, bf16) -> tensor<?x3xbf16>
// CHECK-NEXT:    %wc = fusion.where %p, %z, %y : (i1, bf16, tensor<?x3xbf16>) -> tensor<?x3xbf16>
// CHECK-NEXT:    %wss = fusion.where %p, %f, %g : (i1, f32, f32) -> f32
// CHECK-NEXT:    %wb = fusion.where %p, %p, %p : i1

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "where"
// CHECK-GENERIC:         %w = "fusion.where"(%c, %x, %y) : (tensor<?x3xi1>, tensor<?x3xbf16>, tensor<?x3xbf16>) -> tensor<?x3xbf16>
// CHECK-GENERIC-NEXT:    %ws = "fusion.where"(%c, %x, %z) : (tensor<?x3xi1>, tensor<?x3xbf16>, bf16) -> tensor<?x3xbf16>
// CHECK-GENERIC-NEXT:    %wc = "fusion.where"(%p, %z, %y) : (i1, bf16, tensor<?x3xbf16>) -> tensor<?x3xbf16>
// CHECK-GENERIC-NEXT:    %wss = "fusion.where"(%p, %f, %g) : (i1, f32, f32) -> f32
// CHECK-GENERIC-NEXT:    %wb = "fusion.where"(%p, %p, %p) : (i1, i1, i1) -> i1
