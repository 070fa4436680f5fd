// topk (k = 50) over rows of 32768 f32: the sort scheduler's kernel (a block of 1024 threads per
// row, 32 elements of it in each thread's registers, thread t's element e at t + 1024 e; the
// selection and the sort of the 50 taken in 64 shared slots by kernel.block_topk; the k results
// stored by the threads in turn, the indices widened to i64).
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="1024x32768"}' | filecheck %s

fusion.fusion @topk(%x: tensor<?x?xf32>) -> (tensor<?x50xf32>, tensor<?x50xi64>) {
  %v, %i = fusion.topk %x along 1 k(50) largest : tensor<?x?xf32> -> tensor<?x50xf32>, tensor<?x50xi64>
  fusion.output %v, %i : tensor<?x50xf32>, tensor<?x50xi64>
}

// CHECK:      kernel.func @topk_sort(%x: !kernel.tensor<f32, 2>, %v: !kernel.tensor<f32, 2>, %i: !kernel.tensor<i64, 2>)
// CHECK-SAME: fuser.scheduler = "sort"
// CHECK-SAME: fuser.params = "SortParams(block=(1024, 1, 1), elements=32, width=64, index_bits=32)"
// CHECK-SAME: fuser.launch = "grid=[1024, 1, 1] block=[1024, 1, 1] smem=512"
// CHECK:      %row = kernel.alloc zeroed : !kernel.array<32xf32, local>
// CHECK:      scf.for %e = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:        kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 2>, i32 -> f32
// CHECK:        kernel.array_store %{{.*}}, %row[%e]
// CHECK:      } {unroll}
// CHECK:      %top = kernel.alloc : !kernel.array<64xf32, dynamic>
// CHECK-NEXT: %top_index = kernel.alloc : !kernel.array<64xi32, dynamic>
// CHECK:      kernel.block_topk %row, %x_size1, %{{.*}}, %top, %top_index descending : !kernel.array<32xf32, local>, i32, !kernel.array<64xf32, dynamic>, !kernel.array<64xi32, dynamic>
// CHECK-NEXT: scf.for %j = %thread_id_x to %{{.*}} step %{{.*}} : i32 {
// CHECK:        %[[AT:.*]] = kernel.array_load %top_index[%j]
// CHECK-NEXT:   %[[WIDE:.*]] = arith.extsi %[[AT]] : i32 to i64
// CHECK:        kernel.store %[[WIDE]], %i[%{{.*}}] : i64, !kernel.tensor<i64, 2>, i32
