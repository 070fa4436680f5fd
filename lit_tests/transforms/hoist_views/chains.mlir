// fuser-hoist-views moves a reshape above the pointwise ops it follows, to the fusion's
// inputs; a chain that meets a broadcast stays, and a reshape of a reshape folds into one.
// RUN: fuser-opt %s -p fuser-hoist-views | filecheck %s

fusion.fusion @chain(%a: tensor<?x768xf32>, %b: tensor<?x768xf32>) -> (tensor<?x12x64xf32>) {
  %s = fusion.add %a, %b : tensor<?x768xf32>
  %g = fusion.gelu %s tanh : tensor<?x768xf32>
  %h = fusion.reshape %g : tensor<?x768xf32> -> tensor<?x12x64xf32>
  fusion.output %h : tensor<?x12x64xf32>
}

// CHECK-LABEL: fusion.fusion @chain
// CHECK-NEXT:    %[[A:.*]] = fusion.reshape %a : tensor<?x768xf32> -> tensor<?x12x64xf32>
// CHECK-NEXT:    %[[B:.*]] = fusion.reshape %b : tensor<?x768xf32> -> tensor<?x12x64xf32>
// CHECK-NEXT:    %[[S:.*]] = fusion.add %[[A]], %[[B]] : tensor<?x12x64xf32>
// CHECK-NEXT:    %h = fusion.gelu %[[S]] tanh : tensor<?x12x64xf32>
// CHECK-NEXT:    fusion.output %h : tensor<?x12x64xf32>

fusion.fusion @broadcast(%a: tensor<4x6xf32>, %v: tensor<6xf32>) -> (tensor<24xf32>) {
  %vb = fusion.broadcast_in_dim %v [1] : tensor<6xf32> -> tensor<4x6xf32>
  %s = fusion.mul %a, %vb : tensor<4x6xf32>
  %r = fusion.reshape %s : tensor<4x6xf32> -> tensor<24xf32>
  fusion.output %r : tensor<24xf32>
}

// CHECK-LABEL: fusion.fusion @broadcast
// CHECK:         %s = fusion.mul %a, %vb : tensor<4x6xf32>
// CHECK-NEXT:    %r = fusion.reshape %s : tensor<4x6xf32> -> tensor<24xf32>

fusion.fusion @twice(%a: tensor<4x6xf32>) -> (tensor<3x8xf32>) {
  %r = fusion.reshape %a : tensor<4x6xf32> -> tensor<24xf32>
  %q = fusion.reshape %r : tensor<24xf32> -> tensor<3x8xf32>
  %n = fusion.neg %q : tensor<3x8xf32>
  fusion.output %n : tensor<3x8xf32>
}

// CHECK-LABEL: fusion.fusion @twice
// CHECK-NEXT:    %q = fusion.reshape %a : tensor<4x6xf32> -> tensor<3x8xf32>
// CHECK-NEXT:    %n = fusion.neg %q : tensor<3x8xf32>
