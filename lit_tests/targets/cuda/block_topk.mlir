// kernel.block_topk as fuser::block_topk of fuser/sort.cuh: the elements per thread and the sort
// width as template arguments, the direction and whether -0.0 equals +0.0 (an argsort's order) as
// flags.
// RUN: fuser-opt %s -t 'cuda{preamble=false}' | filecheck %s
// RUN: fuser-opt %s | fuser-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: fuser-opt %s -t cuda | filecheck %s --check-prefix=INCLUDES

kernel.func @top(%n: i32, %k: i32) attributes {max_threads = 256 : i64} {
  %vals = kernel.alloc : !kernel.array<8xf64, local>
  %top = kernel.alloc : !kernel.array<16xf64, dynamic>
  %at = kernel.alloc : !kernel.array<16xi32, dynamic>
  kernel.block_topk %vals, %n, %k, %top, %at descending : !kernel.array<8xf64, local>, i32, !kernel.array<16xf64, dynamic>, !kernel.array<16xi32, dynamic>
  kernel.block_topk %vals, %n, %n, %top, %at equal_zeros : !kernel.array<8xf64, local>, i32, !kernel.array<16xf64, dynamic>, !kernel.array<16xi32, dynamic>
  kernel.return
}

// CHECK:      fuser::block_topk<8, 16, true, false>(vals, n, k, top, at);
// CHECK-NEXT: fuser::block_topk<8, 16, false, true>(vals, n, n, top, at);

// ROUNDTRIP:  kernel.block_topk %vals, %n, %k, %top, %at descending : !kernel.array<8xf64, local>, i32, !kernel.array<16xf64, dynamic>, !kernel.array<16xi32, dynamic>
// ROUNDTRIP:  kernel.block_topk %vals, %n, %n, %top, %at equal_zeros : !kernel.array<8xf64, local>, i32, !kernel.array<16xf64, dynamic>, !kernel.array<16xi32, dynamic>

// INCLUDES:   #include "fuser/sort.cuh"
