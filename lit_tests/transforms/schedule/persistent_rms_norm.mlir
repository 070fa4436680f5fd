// RMS norm over the last dim of a bf16 [16384, 4096] tensor (the benchmark): the sum of squares
// is a reduction whose result scales the same row, so the row stays in registers (4 vectors of
// 8 bf16 per thread, 128 threads per row) between the block reduction and the scaling: x in
// f32 is kept in a local array of 32 (registers, as the loops over it are fully unrolled).
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="16384x4096,4096"}' | filecheck %s

fusion.fusion @rms_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>) -> (tensor<?x?xbf16>) {
  %n = fusion.dim %x[0] : tensor<?x?xbf16>
  %d = fusion.dim %x[1] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %sq = fusion.mul %xf, %xf : tensor<?x?xf32>
  %ms = fusion.sum %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %k = fusion.constant 2.44140625e-04 : f32
  %mean = fusion.mul %ms, %k : (tensor<?xf32>, f32) -> tensor<?xf32>
  %eps = fusion.constant 1.0e-05 : f32
  %me = fusion.add %mean, %eps : (tensor<?xf32>, f32) -> tensor<?xf32>
  %inv = fusion.rsqrt %me : tensor<?xf32>
  %ib = fusion.broadcast_in_dim %inv [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %wf = fusion.cast %w : tensor<?xbf16> -> tensor<?xf32>
  %wb = fusion.broadcast_in_dim %wf [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %y0 = fusion.mul %xf, %ib : tensor<?x?xf32>
  %y1 = fusion.mul %y0, %wb : tensor<?x?xf32>
  %y = fusion.cast %y1 : tensor<?x?xf32> -> tensor<?x?xbf16>
  fusion.output %y : tensor<?x?xbf16>
}

// CHECK:      kernel.func @rms_norm_persistent(%x: !kernel.tensor<bf16, 2>, %w: !kernel.tensor<bf16, 1>, %y: !kernel.tensor<bf16, 2>)
// CHECK-SAME: fuser.scheduler = "persistent"
// CHECK-SAME: fuser.params = "PersistentParams(block=(128, 1, 1)
// CHECK-SAME: vector_width=8, index_bits=32), chunks=4, prefetch=False, shared_sums=False)"
// CHECK-SAME: fuser.launch = "grid=[16384, 1, 1] block=[128, 1, 1] smem=0"
// CHECK:      kernel.comment "load x"
// CHECK-NEXT: %x_buf = kernel.alloc zeroed : !kernel.array<32xbf16, local>
// CHECK-NEXT: scf.for
// CHECK:          kernel.load %x[%{{.*}}] : !kernel.tensor<bf16, 2>, i32 -> vector<8xbf16>
// CHECK:      } {unroll}
// CHECK-NEXT: %sq_slots = kernel.alloc : !kernel.array<32xf32, local>
// CHECK-NEXT: %xf_slots = kernel.alloc : !kernel.array<32xf32, local>
// CHECK-NEXT: scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:        %sq = arith.mulf %xf, %xf : f32
// CHECK-NEXT:   kernel.array_store %sq, %sq_slots[%[[S]]] : f32, !kernel.array<32xf32, local>, i32
// CHECK-NEXT:   kernel.array_store %xf, %xf_slots[%[[S]]] : f32, !kernel.array<32xf32, local>, i32
// CHECK-NEXT: } {unroll}
// CHECK-NEXT: kernel.comment "reduce fusion.sum sq"
// CHECK:      %ms = kernel.block_reduce sum %{{.*}} along x : f32
// CHECK:      kernel.load %w[%col_2] : !kernel.tensor<bf16, 1>, i32 -> vector<8xbf16>
// CHECK:      %inv = math.rsqrt %me : f32
// CHECK:      scf.for %[[S1:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT:   %xf_1 = kernel.array_load %xf_slots[%[[S1]]] : !kernel.array<32xf32, local>, i32 -> f32
// CHECK:        %y0 = arith.mulf %xf_1, %inv : f32
// CHECK:      } {unroll}
// CHECK:      kernel.store %{{.*}}, %y[%{{.*}}] : vector<8xbf16>, !kernel.tensor<bf16, 2>, i32
// CHECK-NEXT: }
// CHECK-NEXT: } {unroll}
