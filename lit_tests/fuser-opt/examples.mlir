// The bundled example parses, verifies and prints back unchanged in both forms.
// RUN: fuser-opt %S/../../examples/layer_norm.mlir | filecheck %s
// RUN: fuser-opt %S/../../examples/layer_norm.mlir --print-op-generic | fuser-opt | filecheck %s

// CHECK:      fusion.fusion @layer_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>, %b: tensor<?xbf16>) -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) {
// CHECK:        %var, %mean = fusion.var_mean %xf [1] correction(0) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
// CHECK:        fusion.output %y, %mean, %invstd : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
