// An embedding: rows of %w at each id of %i. The pointwise scheduler loads the id (once per
// vector: it does not change along the row), counts a negative one from the end, clamps it into
// [0, rows), and loads the row at it 8-wide; no kernel reads outside %w.
// RUN: fuser-opt %s -p 'fuser-compile{shapes="4x33,1000x256"}' | filecheck %s

fusion.fusion @embedding(%i: tensor<?x?xi64>, %w: tensor<?x256xbf16>) -> (tensor<?x?x256xbf16>) {
  %y = fusion.take %w, %i dim 0 : tensor<?x256xbf16>, tensor<?x?xi64> -> tensor<?x?x256xbf16>
  fusion.output %y : tensor<?x?x256xbf16>
}

// CHECK:      host.launch @embedding_s0_pointwise {{.*}} ins(%i, %w : tensor<?x?xi64>, tensor<?x256xbf16>) outs(%y : tensor<?x?x256xbf16>)
// CHECK:      kernel.func @embedding_s0_pointwise
// CHECK-SAME: vector_width=8
// CHECK:      %[[ID:.*]] = kernel.load %i[%i_off] : !kernel.tensor<i64, 2>, i32 -> i64
// CHECK:      arith.cmpi slt
// CHECK:      arith.select
// CHECK:      arith.minsi
// CHECK:      arith.maxsi
// CHECK:      %w_at0 = arith.trunci
// CHECK:      kernel.load %w[%w_off] : !kernel.tensor<bf16, 2>, i32 -> vector<8xbf16>
