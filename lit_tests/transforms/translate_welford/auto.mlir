// mode=auto (the default) translates only where the persistent scheduler accepts the two-pass
// form for the given shapes. Refused here: a row of 100000 f32 elements does not fit in
// registers, and a reduction over the outer dim would keep columns on chip across blocks; both
// would need a grid reduction, so the var_mean stays. (Where the two-pass form fits, whether it
// is taken is AUTO_TRANSLATE's choice: see segment.mlir and tests/test_translate_welford.py.)
// RUN: fuser-opt %s --split-input-file -p 'translate-welford{shapes="4x100000"}' | filecheck %s

fusion.fusion @normalize(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %var, %mean = fusion.var_mean %x [1] correction(0) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  %mean_b = fusion.broadcast_in_dim %mean [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %var_b = fusion.broadcast_in_dim %var [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %centered = fusion.sub %x, %mean_b : tensor<?x?xf32>
  %y = fusion.div %centered, %var_b : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// CHECK-LABEL: fusion.fusion @normalize
// CHECK-NEXT:    %d = fusion.dim %x[1] : tensor<?x?xf32>
// CHECK-NEXT:    %var, %mean = fusion.var_mean %x [1] correction(0)
// CHECK-NOT:     fusion.sum

// -----

fusion.fusion @columns(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %var, %mean = fusion.var_mean %x [0] correction(1) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  %mean_b = fusion.broadcast_in_dim %mean [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.sub %x, %mean_b : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// CHECK-LABEL: fusion.fusion @columns
// CHECK-NEXT:    %n = fusion.dim %x[0] : tensor<?x?xf32>
// CHECK-NEXT:    %var, %mean = fusion.var_mean %x [0] correction(1)
// CHECK-NOT:     fusion.sum
