// One case per rule of the sharding verifier; each error is located at the op (or the fusion)
// that carries the sharding.
// RUN: fuser-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{'fusion.fusion @count' fusion.input_shardings has 1 entries for 2 inputs}}
fusion.fusion @count(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1]>]} {
  fusion.output %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'fusion.fusion @rank' fusion.input_shardings: input #0 of type tensor<4xf32> (rank 1) cannot be split along axis 1}}
fusion.fusion @rank(%x: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>]} {
  fusion.output %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'fusion.fusion @divide' fusion.input_shardings: input #0 of type tensor<5xf32> cannot be split along axis 0 over 2 devices: 5 is not a multiple of 2}}
fusion.fusion @divide(%x: tensor<5xf32>) -> tensor<5xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 0>]} {
  fusion.output %x : tensor<5xf32>
}

// -----

// expected-error @+1 {{fusion.input_shardings: input #1 is the scalar f32; a scalar cannot be split}}
fusion.fusion @scalar(%x: tensor<4xf32>, %a: f32) -> tensor<4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1]>, #fusion.sharding<mesh [0, 1], axis 0>]} {
  fusion.output %x : tensor<4xf32>
}

// -----

fusion.fusion @op_axis(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{'fusion.exp' fusion.sharding: result #0 of type tensor<4x6xf32> cannot be split along axis 1 over 4 devices: 6 is not a multiple of 4}}
  %y = fusion.exp %x {fusion.sharding = #fusion.sharding<mesh [0, 1, 2, 3], axis 1>} : tensor<4x6xf32>
  fusion.output %y : tensor<4x6xf32>
}

// -----

fusion.fusion @not_sharding(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.exp' fusion.sharding must be a #fusion.sharding, got 1 : i64}}
  %y = fusion.exp %x {fusion.sharding = 1 : i64} : tensor<4xf32>
  fusion.output %y : tensor<4xf32>
}

// -----

fusion.fusion @scalar_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.dim' fusion.sharding needs a tensor result}}
  %n = fusion.dim %x[0] {fusion.sharding = #fusion.sharding<mesh [0]>} : tensor<4xf32>
  fusion.output %x : tensor<4xf32>
}
