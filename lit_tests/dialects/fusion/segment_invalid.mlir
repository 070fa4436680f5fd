// RUN: fuser-opt %s --split-input-file --verify-diagnostics

fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  // expected-error @+1 {{'fusion.segment' yields (tensor<4xf32>, tensor<4xf32>) but has results (tensor<4xf32>)}}
  %r = fusion.segment "pointwise" (%x) : (tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%x0: tensor<4xf32>):
    %e = fusion.exp %x0 : tensor<4xf32>
    fusion.yield %e, %e : tensor<4xf32>, tensor<4xf32>
  }
  fusion.output %r : tensor<4xf32>
}

// -----

fusion.fusion @f(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  // expected-error @+1 {{'fusion.segment' block argument types must match its operand types}}
  %r = fusion.segment "pointwise" (%x) : (tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%x0: tensor<5xf32>):
    %e = fusion.exp %x0 : tensor<5xf32>
    fusion.yield %x0 : tensor<5xf32>
  }
  fusion.output %r : tensor<4xf32>
}

