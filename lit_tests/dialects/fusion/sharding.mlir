// Shardings: `#fusion.sharding<mesh [...], axis a>` on fusion inputs (fusion.input_shardings) and
// on ops (fusion.sharding) print and parse back; each rule of the verifier has a located case.
// RUN: fuser-opt %s --split-input-file | filecheck %s

// CHECK:      fusion.fusion @rms(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>, #fusion.sharding<mesh [0, 1]>]} {
// CHECK-NEXT:   %y = fusion.exp %x {fusion.sharding = #fusion.sharding<mesh [2, 3], axis 0>} : tensor<?x8xf32>
fusion.fusion @rms(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>, #fusion.sharding<mesh [0, 1]>]} {
  %y = fusion.exp %x {fusion.sharding = #fusion.sharding<mesh [2, 3], axis 0>} : tensor<?x8xf32>
  fusion.output %y : tensor<?x8xf32>
}
