// The matmul scheduler on three fusions (static shapes, so no `shapes` option).
// RUN: fuser-opt %s --split-input-file -p fuser-schedule | filecheck %s
// RUN: fuser-opt %s --split-input-file -p fuser-schedule | fuser-opt --split-input-file | filecheck %s
// The same on an A100 (sm_80): the tensor-core tiles of mma.sync instead of Hopper's wgmma.
// RUN: fuser-opt %s --split-input-file -p 'fuser-schedule{arch=sm_80}' | filecheck %s --check-prefix=AMPERE

// A bf16 linear layer (gelu(a @ b + bias), bf16 out) of 4096 x 4096 x 4096 takes the tensor
// cores' large tile (128 x 256, k tiles of 64, two warpgroups of wgmma, 4 stages; on an A100
// k tiles of 32, 2 x 4 warps of mma.sync, 5 stages), A copied along K and B along N
// (cp.async); blocks walk the tiles in groups of 8 tile rows. The epilogue runs per
// accumulator pair: the f32 sum rounded to bf16 (the matmul's type), the bias read at the
// column, gelu, and the pair stored as one vector.
fusion.fusion @linear(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>, %bias: tensor<4096xbf16>) -> (tensor<4096x4096xbf16>) {
  %c = fusion.matmul %a, %b : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  %cf = fusion.cast %c : tensor<4096x4096xbf16> -> tensor<4096x4096xf32>
  %bf = fusion.cast %bias : tensor<4096xbf16> -> tensor<4096xf32>
  %bb = fusion.broadcast_in_dim %bf [1] : tensor<4096xf32> -> tensor<4096x4096xf32>
  %s = fusion.add %cf, %bb : tensor<4096x4096xf32>
  %g = fusion.gelu %s tanh : tensor<4096x4096xf32>
  %y = fusion.cast %g : tensor<4096x4096xf32> -> tensor<4096x4096xbf16>
  fusion.output %y : tensor<4096x4096xbf16>
}

// CHECK:      kernel.func @linear_matmul(%a: !kernel.tensor<bf16, 2>, %b: !kernel.tensor<bf16, 2>, %bias: !kernel.tensor<bf16, 1>, %y: !kernel.tensor<bf16, 2>)
// CHECK-SAME:   fuser.scheduler = "matmul"
// CHECK-SAME:   fuser.params = "MatmulParams(block=(256, 1, 1), engine='wgmma', tile=(128, 256, 64), warps=(8, 1), stages=4, load_a='k_async', load_b='mn_async', group_m=8, pair_stores=True, index_bits=32, shared_bytes=197632)"
// CHECK-SAME:   fuser.launch = "grid=[512, 1, 1] block=[256, 1, 1] smem=197632"
// AMPERE:       kernel.func @linear_matmul
// AMPERE-SAME:    fuser.params = "MatmulParams(block=(256, 1, 1), engine='mma', tile=(128, 256, 32), warps=(2, 4), stages=5, load_a='k_async', load_b='mn_async', group_m=8, pair_stores=True, index_bits=32, shared_bytes=122880)"
// AMPERE:         kernel.matmul_mainloop {{.*}} config #kernel.matmul<mma bf16, tile 128x256x32, warps 2x4, stages 5, a k_async, b mn_async>
// CHECK-SAME:   max_threads = 256 : i64

// The tile of this block: blockIdx.x in groups of 8 tile rows.
// CHECK:        %tiles_m = arith.divsi
// CHECK:        %tiles_n = arith.divsi
// CHECK:        %group_tiles = arith.muli %tiles_n, %{{.*}} : i32
// CHECK:        %group_rows = arith.minsi
// CHECK:        %in_group = arith.remsi %block_id_x, %group_tiles : i32
// CHECK:        %m0 = arith.muli
// CHECK-NEXT:   %n0 = arith.muli

// The mainloop: 128 accumulators a thread, over all of K.
// CHECK:        %acc = kernel.alloc : !kernel.array<128xf32, local>
// CHECK-NEXT:   kernel.comment "fusion.matmul %c"
// CHECK-NEXT:   kernel.matmul_mainloop %acc, %a[%[[Z:.*]]], %b[%[[Z]]] rows %m0 cols %n0 k %[[Z]] to %a_size1 config #kernel.matmul<wgmma bf16, tile 128x256x64, warps 8x1, stages 4, a k_async, b mn_async> : !kernel.array<128xf32, local>, !kernel.tensor<bf16, 2>, !kernel.tensor<bf16, 2>, i32

// The epilogue, one accumulator pair per iteration.
// CHECK:        %y_pair = kernel.alloc : !kernel.array<2xbf16, local>
// CHECK-NEXT:   scf.for %q = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT:     %i = arith.muli %q, %{{.*}} : i32
// CHECK-NEXT:     %tile_row, %tile_col = kernel.matmul_frag %i config #kernel.matmul<wgmma bf16, tile 128x256x64, warps 8x1, stages 4, a k_async, b mn_async> : i32
// CHECK-NEXT:     %row = arith.addi %m0, %tile_row : i32
// CHECK-NEXT:     %col = arith.addi %n0, %tile_col : i32
// CHECK:          scf.if %{{.*}} {
// CHECK-NEXT:       %[[ACC:.*]] = kernel.array_load %acc[%i] : !kernel.array<128xf32, local>, i32 -> f32
// CHECK-NEXT:       %c = arith.truncf %[[ACC]] : f32 to bf16
// CHECK-NEXT:       kernel.comment "fusion.cast %cf"
// CHECK-NEXT:       %cf = arith.extf %c : bf16 to f32
// CHECK-NEXT:       kernel.comment "fusion.cast %bf"
// CHECK-NEXT:       %bias_off = arith.muli %col, %bias_stride0 : i32
// CHECK-NEXT:       %{{.*}} = kernel.load %bias[%bias_off] : !kernel.tensor<bf16, 1>, i32 -> bf16
// CHECK:            kernel.comment "fusion.gelu %g"
// CHECK:            kernel.array_store %{{.*}}, %y_pair[%{{.*}}] : bf16, !kernel.array<2xbf16, local>, i32
// CHECK:            %bias_off_1 = arith.muli %col1, %bias_stride0 : i32
// CHECK:            %[[PAIR:.*]] = kernel.array_load %y_pair[%{{.*}}] : !kernel.array<2xbf16, local>, i32 -> vector<2xbf16>
// CHECK-NEXT:       %{{.*}} = arith.muli %row, %y_stride0 : i32
// CHECK:            kernel.store %[[PAIR]], %y[%y_off] : vector<2xbf16>, !kernel.tensor<bf16, 2>, i32
// CHECK:        } {unroll}

// -----

// A small one with odd extents takes the small tile. Rows of K = 17 bf16 are not 16-byte
// aligned, so both operands are loaded element by element (A along K, B along N), and N = 17
// is stored one element at a time, each predicated on its own column.
fusion.fusion @odd(%a: tensor<33x17xbf16>, %b: tensor<17x17xbf16>) -> (tensor<33x17xbf16>) {
  %c = fusion.matmul %a, %b : tensor<33x17xbf16>, tensor<17x17xbf16> -> tensor<33x17xbf16>
  fusion.output %c : tensor<33x17xbf16>
}

// CHECK:      kernel.func @odd_matmul
// CHECK-SAME:   fuser.params = "MatmulParams(block=(128, 1, 1), engine='wgmma', tile=(64, 64, 64), warps=(4, 1), stages=4, load_a='k_elements', load_b='mn_elements', group_m=8, pair_stores=False, index_bits=32, shared_bytes=66560)"
// CHECK-SAME:   fuser.launch = "grid=[1, 1, 1] block=[128, 1, 1] smem=66560"
// CHECK:        kernel.matmul_mainloop {{.*}} config #kernel.matmul<wgmma bf16, tile 64x64x64, warps 4x1, stages 4, a k_elements, b mn_elements>
// AMPERE:       kernel.func @odd_matmul
// AMPERE:         kernel.matmul_mainloop {{.*}} config #kernel.matmul<mma bf16, tile 64x64x64, warps 2x2, stages 4, a k_elements, b mn_elements>
// CHECK:        %[[IN_ROWS:.*]] = arith.cmpi slt, %row, %a_size0 : i32
// CHECK-NEXT:   scf.if %[[IN_ROWS]] {
// CHECK-NEXT:     %[[IN_COL:.*]] = arith.cmpi slt, %col, %b_size1 : i32
// CHECK-NEXT:     scf.if %[[IN_COL]] {
// CHECK:            kernel.store %{{.*}}, %c[%c_off] : bf16, !kernel.tensor<bf16, 2>, i32
// CHECK:          %[[IN_COL1:.*]] = arith.cmpi slt, %col1, %b_size1 : i32
// CHECK-NEXT:     scf.if %[[IN_COL1]] {
// CHECK:            kernel.store %{{.*}}, %c[%c_off_1] : bf16, !kernel.tensor<bf16, 2>, i32

// -----

// A batched f32 split-K partial (splits 2) runs on the CUDA cores (SIMT tile 64 x 64 x 16, 256
// threads). blockIdx.z walks the splits, then the batch: the split index picks the K chunk
// [k0, k1) of ceil(K / 2), the batch index the operands' offsets.
fusion.fusion @partial(%a: tensor<3x65x301xf32>, %b: tensor<3x301x33xf32>) -> (tensor<2x3x65x33xf32>) {
  %p = fusion.matmul %a, %b splits(2) : tensor<3x65x301xf32>, tensor<3x301x33xf32> -> tensor<2x3x65x33xf32>
  fusion.output %p : tensor<2x3x65x33xf32>
}

// CHECK:      kernel.func @partial_matmul
// CHECK-SAME:   fuser.params = "MatmulParams(block=(256, 1, 1), engine='simt', tile=(64, 64, 16), warps=(8, 1), stages=2, load_a='k_elements', load_b='mn_elements', group_m=8, pair_stores=False, index_bits=32, shared_bytes=
// CHECK-SAME:   fuser.launch = "grid=[2, 1, 6] block=[256, 1, 1] smem=
// CHECK:        %lead1 = arith.remsi %block_id_z, %{{.*}} : i32
// CHECK-NEXT:   %lead0 = arith.divsi %block_id_z, %{{.*}} : i32
// CHECK:        %a_off = arith.muli %lead1, %a_stride0 : i32
// CHECK:        %b_off = arith.muli %lead1, %b_stride0 : i32
// CHECK:        %k_chunk = arith.divsi
// CHECK-NEXT:   %[[START:.*]] = arith.muli %lead0, %k_chunk : i32
// CHECK-NEXT:   %k0 = arith.minsi %[[START]], %a_size2 : i32
// CHECK-NEXT:   %[[END:.*]] = arith.addi %k0, %k_chunk : i32
// CHECK-NEXT:   %k1 = arith.minsi %[[END]], %a_size2 : i32
// CHECK:        %acc = kernel.alloc : !kernel.array<16xf32, local>
// CHECK:        kernel.matmul_mainloop %acc, %a[%a_off], %b[%b_off] rows %m0 cols %n0 k %k0 to %k1 config #kernel.matmul<simt f32, tile 64x64x16, warps 8x1, stages 2, a k_elements, b mn_elements>
// CHECK:        scf.for %q
// CHECK:            %[[V:.*]] = kernel.array_load %acc[%i] : !kernel.array<16xf32, local>, i32 -> f32
// CHECK:            kernel.store %[[V]], %p[%p_off] : f32, !kernel.tensor<f32, 4>, i32
