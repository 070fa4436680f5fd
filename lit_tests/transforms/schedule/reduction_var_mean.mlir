// var_mean over the last dim (the benchmark's [16384, 4096] f32): Welford in the kernel. Each
// loop iteration reduces its 16 loaded elements by two passes over registers (count, mean,
// squared deviations from that mean), merges them into the loop-carried (mean, M2, count) state
// with Chan's formula (the divisions by counts are the fast `afn` ones), then two block sums
// combine the row's threads: of n mean (the row's mean), then of M2 + n (mean_t - mean)^2 (each
// thread's M2 moved to the row's mean); var = M2 / max(N - correction, 0). No sum of squares is
// formed, so a large mean is harmless.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="16384x4096"}' | filecheck %s

fusion.fusion @var_mean(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %v, %m = fusion.var_mean %x [1] correction(1) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  fusion.output %v, %m : tensor<?xf32>, tensor<?xf32>
}

// CHECK:      kernel.func @var_mean_reduction(
// CHECK-SAME: fuser.scheduler = "reduction"
// CHECK-SAME: fuser.params = "ReductionParams(block=(128, 2, 1), layout=Layout(inner=True
// CHECK-SAME: vector_width=4, index_bits=32), unroll=4)"
// CHECK-SAME: fuser.launch = "grid=[8192, 1, 1] block=[128, 2, 1] smem=0"
// CHECK:      scf.for %col = %{{.*}} to %end step %{{.*}} iter_args(%[[MEAN:.*]] = %acc, %[[M2:.*]] = %acc_1, %[[N:.*]] = %acc_2) -> (f32, f32, f32) : i32 {
// CHECK:        kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:        kernel.comment "reduce fusion.var_mean x"
//                 the iteration's count (4 per valid chunk), sum and mean
// CHECK:        arith.select %valid, %{{.*}}, %{{.*}} : f32
// CHECK:        %[[ONE:.*]] = arith.maximumf %[[CNT:.*]], %{{.*}} : f32
// CHECK-NEXT:   %[[IMEAN:.*]] = arith.divf %{{.*}}, %[[ONE]] fastmath<afn> : f32
// CHECK-NEXT:   %[[D:.*]] = arith.subf %{{.*}}, %[[IMEAN]] : f32
// CHECK-NEXT:   arith.mulf %[[D]], %[[D]] : f32
//                 Chan's merge into the carried state
// CHECK:        %[[TOTAL:.*]] = arith.addf %[[N]], %[[CNT]] : f32
// CHECK-NEXT:   %[[DELTA:.*]] = arith.subf %[[IMEAN]], %[[MEAN]] : f32
// CHECK:        %[[W:.*]] = arith.divf %[[CNT]], %{{.*}} fastmath<afn> : f32
// CHECK:        scf.yield %[[TM:.*]], %[[TM2:.*]], %[[TOTAL]] : f32, f32, f32
// CHECK:      kernel.comment "combine fusion.var_mean across the row's threads"
// CHECK:      %[[NM:.*]] = arith.mulf %[[TN:.*]], %[[TMEAN:.*]] : f32
// CHECK-NEXT: %[[S:.*]] = kernel.block_reduce sum %[[NM]] along x : f32
// CHECK:      %[[AVG:.*]] = arith.divf %[[S]], %{{.*}} : f32
// CHECK-NEXT: %[[DT:.*]] = arith.subf %[[TMEAN]], %[[AVG]] : f32
// CHECK-NEXT: %[[ND:.*]] = arith.mulf %[[TN]], %[[DT]] : f32
// CHECK-NEXT: %[[NDD:.*]] = arith.mulf %[[ND]], %[[DT]] : f32
// CHECK-NEXT: %[[MOVED:.*]] = arith.addf %{{.*}}, %[[NDD]] : f32
// CHECK-NEXT: %[[SQ:.*]] = kernel.block_reduce sum %[[MOVED]] along x : f32
// CHECK-NOT:  kernel.block_welford
// CHECK:      %m_1 = arith.select %{{.*}}, %{{.*}}, %[[AVG]] : f32
// CHECK:      %[[DOF:.*]] = arith.maxsi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[DOF]] : i32 to f32
// CHECK-NEXT: %v_1 = arith.divf %[[SQ]], %[[F]] : f32
// CHECK:      kernel.store %v_1, %v[%row] : f32, !kernel.tensor<f32, 1>, i32
// CHECK:      kernel.store %m_1, %m[%row] : f32, !kernel.tensor<f32, 1>, i32
