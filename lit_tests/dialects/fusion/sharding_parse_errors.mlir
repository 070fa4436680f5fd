// A mesh that is no mesh is a located parse error (the first RUN line reports every case); without
// --parsing-diagnostics the first one ends fuser-opt with a one-line error.
// RUN: fuser-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// RUN: not fuser-opt %s 2>&1 | filecheck %s --check-prefix=FIRST

// CHECK:      sharding_parse_errors.mlir:[[# @LINE + 2]]:{{[0-9]+}}
// CHECK:      #fusion.sharding: a mesh needs at least one device
fusion.fusion @empty_mesh(%x: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh []>]} {
  fusion.output %x : tensor<4xf32>
}
// FIRST: sharding_parse_errors.mlir:[[# @LINE - 3]]:{{[0-9]+}}: error: #fusion.sharding: a mesh needs at least one device
// FIRST-NOT: Traceback

// -----

// CHECK:      sharding_parse_errors.mlir:[[# @LINE + 2]]:{{[0-9]+}}
// CHECK:      #fusion.sharding: mesh [1, 1] lists a device twice
fusion.fusion @twice(%x: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [1, 1]>]} {
  fusion.output %x : tensor<4xf32>
}

// -----

// CHECK:      sharding_parse_errors.mlir:[[# @LINE + 2]]:{{[0-9]+}}
// CHECK:      #fusion.sharding: mesh [-1, 0] has a negative device
fusion.fusion @negative(%x: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [-1, 0]>]} {
  fusion.output %x : tensor<4xf32>
}
