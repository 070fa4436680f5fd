// Malformed fusion IR: each case is a located parse error. The first RUN line reports every
// case (--parsing-diagnostics); the second checks that, without it, the first error ends
// fuser-opt with a one-line located diagnostic and a non-zero exit.
// RUN: fuser-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// RUN: not fuser-opt %s 2>&1 | filecheck %s --check-prefix=FIRST

// An unknown op.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:26
// CHECK:      Operation fusion.frobnicate is not registered
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.frobnicate %x : tensor<4xf32>
  fusion.output
}

// FIRST:      {{.*}}parse_errors.mlir:[[# @LINE - 4]]:26: error: Operation fusion.frobnicate is not registered
// FIRST-NEXT: %y = fusion.frobnicate %x : tensor<4xf32>
// FIRST-NOT:  Traceback

// -----

// A type conflict: the type in the short form contradicts the operand's type.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:19
// CHECK:      operand is used with type tensor<5xf32>, but has been previously used or defined with type tensor<4xf32>
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.neg %x : tensor<5xf32>
  fusion.output
}

// -----

// A type conflict: the `sizes` of broadcast_in_dim are index values.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:45
// CHECK:      operand is used with type index, but has been previously used or defined with type f32
fusion.fusion @f(%x: tensor<?xf32>, %s: f32) -> () {
  %y = fusion.broadcast_in_dim %x [1] sizes(%s) : tensor<?xf32> -> tensor<?x?xf32>
  fusion.output
}

// -----

// A bad gelu approximation in the custom form.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:23
// CHECK:      Expected `none`, or `tanh`.
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.gelu %x sigmoid : tensor<4xf32>
  fusion.output
}

// -----

// A bad gelu approximation in the generic form.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:64
// CHECK:      Expected `none`, or `tanh`.
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = "fusion.gelu"(%x) <{approximate = #fusion<approximation erf>}> : (tensor<4xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// The functional type form lists one type per operand.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:28
// CHECK:      expected 2 operand types, got 1
fusion.fusion @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> () {
  %z = fusion.add %x, %y : (tensor<4xf32>) -> tensor<4xf32>
  fusion.output
}

// -----

// A reduction needs its axes.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:22
// CHECK:      '[' expected
fusion.fusion @f(%x: tensor<4xf32>) -> () {
  %y = fusion.sum %x : tensor<4xf32> -> tensor<f32>
  fusion.output
}

// -----

// A float value for an integer constant.
// CHECK:      Floating point value is not valid for integer type.
fusion.fusion @f() -> () {
  %c = fusion.constant 1.5 : i32
  fusion.output
}

// -----

// fusion.fusion takes no argument attributes.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 2]]:15
// CHECK:      fusion.fusion takes no argument or result attributes
fusion.fusion @f(%x: tensor<4xf32> {foo}) -> () {
  fusion.output
}

// -----

// fusion.fusion needs a body.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 2]]:15
// CHECK:      fusion.fusion needs a body
fusion.fusion @f(%x: tensor<4xf32>) -> ()

// -----

// An iota of an integer type with a float start.
// CHECK:      {{.*}}parse_errors.mlir:[[# @LINE + 3]]:26
// CHECK:      'fusion.iota' of i64 takes integer start and step, got 0.5 and 1
fusion.fusion @f() -> () {
  %r = fusion.iota start 0.5 step 1 : tensor<4xi64>
  fusion.output
}
