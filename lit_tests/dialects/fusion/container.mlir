// fusion.fusion (inputs, outputs, scalar inputs, discardable attributes), fusion.output,
// fusion.constant of every element type, fusion.dim.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// A fusion with tensor and scalar inputs and two outputs.
fusion.fusion @scale(%x: tensor<?x3xf32>, %alpha: f32, %n: i64) -> (tensor<?x3xf32>, tensor<?x3xf32>) {
  %y = fusion.mul %x, %alpha : (tensor<?x3xf32>, f32) -> tensor<?x3xf32>
  fusion.output %y, %x : tensor<?x3xf32>, tensor<?x3xf32>
}

// CHECK-LABEL: fusion.fusion @scale(%x: tensor<?x3xf32>, %alpha: f32, %n: i64) -> (tensor<?x3xf32>, tensor<?x3xf32>) {
// CHECK-NEXT:    %y = fusion.mul %x, %alpha : (tensor<?x3xf32>, f32) -> tensor<?x3xf32>
// CHECK-NEXT:    fusion.output %y, %x : tensor<?x3xf32>, tensor<?x3xf32>
// CHECK-NEXT:  }

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "scale", function_type = (tensor<?x3xf32>, f32, i64) -> (tensor<?x3xf32>, tensor<?x3xf32>)}> ({
// CHECK-GENERIC-NEXT:    ^bb0(%x: tensor<?x3xf32>, %alpha: f32, %n: i64):
// CHECK-GENERIC-NEXT:      %y = "fusion.mul"(%x, %alpha) : (tensor<?x3xf32>, f32) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:      "fusion.output"(%y, %x) : (tensor<?x3xf32>, tensor<?x3xf32>) -> ()
// CHECK-GENERIC-NEXT:    }) : () -> ()

// An in-place update: output #0 is written into input #0 after a run (add_output's alias_input).
fusion.fusion @update(%m: tensor<8xf32>, %x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %y = fusion.add %m, %x : tensor<8xf32>
  fusion.output %y, %x : tensor<8xf32>, tensor<8xf32> aliases [0, -1]
}

// CHECK-LABEL: fusion.fusion @update
// CHECK:         fusion.output %y, %x : tensor<8xf32>, tensor<8xf32> aliases [0, -1]
// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "update"
// CHECK-GENERIC:         "fusion.output"(%y, %x) <{aliases = array<i64: 0, -1>}> : (tensor<8xf32>, tensor<8xf32>) -> ()

// Outputs in other layouts (add_output's stride_order): #0 column-major, #1 row-major.
fusion.fusion @layouts(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %y = fusion.exp %x : tensor<?x8xf32>
  fusion.output %y, %x : tensor<?x8xf32>, tensor<?x8xf32> stride_orders [array<i64: 0, 1>, array<i64>]
}

// CHECK-LABEL: fusion.fusion @layouts
// CHECK:         fusion.output %y, %x : tensor<?x8xf32>, tensor<?x8xf32> stride_orders [array<i64: 0, 1>, array<i64>]
// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "layouts"
// CHECK-GENERIC:         "fusion.output"(%y, %x) <{stride_orders = [array<i64: 0, 1>, array<i64>]}> : (tensor<?x8xf32>, tensor<?x8xf32>) -> ()

// An input passed straight through, a discardable attribute on the fusion, a rank-0 tensor.
fusion.fusion @identity(%x: tensor<f64>) -> (tensor<f64>) attributes {origin = "test"} {
  fusion.output %x : tensor<f64>
}

// CHECK-LABEL: fusion.fusion @identity(%x: tensor<f64>) -> tensor<f64> attributes {origin = "test"} {
// CHECK-NEXT:    fusion.output %x : tensor<f64>
// CHECK-NEXT:  }

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "identity", function_type = (tensor<f64>) -> tensor<f64>}> ({
// CHECK-GENERIC-NEXT:    ^bb0(%x: tensor<f64>):
// CHECK-GENERIC-NEXT:      "fusion.output"(%x) : (tensor<f64>) -> ()
// CHECK-GENERIC-NEXT:    }) {origin = "test"} : () -> ()

// Constants of every element type, used through broadcast_in_dim so that outputs are tensors.
fusion.fusion @constants() -> (tensor<2xf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf64>, tensor<2xi32>, tensor<2xi64>, tensor<2xi1>) {
  %h = fusion.constant 5.000000e-01 : f16
  %b = fusion.constant -2.500000e+00 : bf16
  %f = fusion.constant 1.000000e-05 : f32
  %d = fusion.constant 3.1415926535897931 : f64
  %i = fusion.constant -7 : i32
  %l = fusion.constant 9223372036854775807 : i64
  %t = fusion.constant true
  %hb = fusion.broadcast_in_dim %h [] : f16 -> tensor<2xf16>
  %bb = fusion.broadcast_in_dim %b [] : bf16 -> tensor<2xbf16>
  %fb = fusion.broadcast_in_dim %f [] : f32 -> tensor<2xf32>
  %db = fusion.broadcast_in_dim %d [] : f64 -> tensor<2xf64>
  %ib = fusion.broadcast_in_dim %i [] : i32 -> tensor<2xi32>
  %lb = fusion.broadcast_in_dim %l [] : i64 -> tensor<2xi64>
  %tb = fusion.broadcast_in_dim %t [] : i1 -> tensor<2xi1>
  fusion.output %hb, %bb, %fb, %db, %ib, %lb, %tb : tensor<2xf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf64>, tensor<2xi32>, tensor<2xi64>, tensor<2xi1>
}

// CHECK-LABEL: fusion.fusion @constants() -> (tensor<2xf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf64>, tensor<2xi32>, tensor<2xi64>, tensor<2xi1>) {
// CHECK-NEXT:    %h = fusion.constant 5.000000e-01 : f16
// CHECK-NEXT:    %b = fusion.constant -2.500000e+00 : bf16
// CHECK-NEXT:    %f = fusion.constant 1.000000e-05 : f32
// CHECK-NEXT:    %d = fusion.constant 3.1415926535897931 : f64
// CHECK-NEXT:    %i = fusion.constant -7 : i32
// CHECK-NEXT:    %l = fusion.constant 9223372036854775807 : i64
// CHECK-NEXT:    %t = fusion.constant true
// CHECK:         fusion.output %hb, %bb, %fb, %db, %ib, %lb, %tb : tensor<2xf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf64>, tensor<2xi32>, tensor<2xi64>, tensor<2xi1>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "constants", function_type = () -> (tensor<2xf16>, tensor<2xbf16>, tensor<2xf32>, tensor<2xf64>, tensor<2xi32>, tensor<2xi64>, tensor<2xi1>)}> ({
// CHECK-GENERIC-NEXT:    %h = "fusion.constant"() <{value = 5.000000e-01 : f16}> : () -> f16
// CHECK-GENERIC-NEXT:    %b = "fusion.constant"() <{value = -2.500000e+00 : bf16}> : () -> bf16
// CHECK-GENERIC-NEXT:    %f = "fusion.constant"() <{value = 1.000000e-05 : f32}> : () -> f32
// CHECK-GENERIC-NEXT:    %d = "fusion.constant"() <{value = 3.1415926535897931 : f64}> : () -> f64
// CHECK-GENERIC-NEXT:    %i = "fusion.constant"() <{value = -7 : i32}> : () -> i32
// CHECK-GENERIC-NEXT:    %l = "fusion.constant"() <{value = 9223372036854775807 : i64}> : () -> i64
// CHECK-GENERIC-NEXT:    %t = "fusion.constant"() <{value = true}> : () -> i1

// fusion.dim on dynamic dims and on a static one; broadcast_in_dim keeps dynamic dims it maps.
fusion.fusion @dims(%x: tensor<?x1x?xf32>) -> (tensor<?x3x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x1x?xf32>
  %one = fusion.dim %x[1] : tensor<?x1x?xf32>
  %k = fusion.dim %x[2] : tensor<?x1x?xf32>
  %y = fusion.broadcast_in_dim %x [0, 1, 2] : tensor<?x1x?xf32> -> tensor<?x3x?xf32>
  fusion.output %y : tensor<?x3x?xf32>
}

// CHECK-LABEL: fusion.fusion @dims(%x: tensor<?x1x?xf32>) -> tensor<?x3x?xf32> {
// CHECK-NEXT:    %n = fusion.dim %x[0] : tensor<?x1x?xf32>
// CHECK-NEXT:    %one = fusion.dim %x[1] : tensor<?x1x?xf32>
// CHECK-NEXT:    %k = fusion.dim %x[2] : tensor<?x1x?xf32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "dims", function_type = (tensor<?x1x?xf32>) -> tensor<?x3x?xf32>}> ({
// CHECK-GENERIC:         %n = "fusion.dim"(%x) <{axis = 0 : i64}> : (tensor<?x1x?xf32>) -> index
// CHECK-GENERIC-NEXT:    %one = "fusion.dim"(%x) <{axis = 1 : i64}> : (tensor<?x1x?xf32>) -> index
// CHECK-GENERIC-NEXT:    %k = "fusion.dim"(%x) <{axis = 2 : i64}> : (tensor<?x1x?xf32>) -> index

// A fusion without inputs or outputs is legal (and prints without a result list).
fusion.fusion @empty() -> () {
  fusion.output
}

// CHECK-LABEL: fusion.fusion @empty() {
// CHECK-NEXT:    fusion.output
// CHECK-NEXT:  }

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "empty", function_type = () -> ()}> ({
// CHECK-GENERIC-NEXT:    "fusion.output"() : () -> ()
// CHECK-GENERIC-NEXT:  }) : () -> ()
