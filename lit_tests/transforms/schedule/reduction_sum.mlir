// sum(-1) and sum(0) of a [16384, 16384] f32 tensor: the reduction scheduler's inner kernel (a
// block per row, 16-byte loads, four in flight per thread, a block reduction along x) and its
// outer kernel (threads along the columns, each with 4 columns, 16 rows loaded per loop
// iteration, rows split across blockDim.y and combined along y; 512 blocks 8 threads wide, 128
// bytes of a row each, rather than 128 wide ones fill the 132 SMs).
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="16384x16384"}' | filecheck %s

fusion.fusion @sum_inner(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}

// CHECK:      kernel.func @sum_inner_reduction(%x: !kernel.tensor<f32, 2>, %s: !kernel.tensor<f32, 1>)
// CHECK-SAME: fuser.scheduler = "reduction"
// CHECK-SAME: fuser.params = "ReductionParams(block=(512, 1, 1), layout=Layout(inner=True, kept_dims=(0,), reduced_dims=(1,)
// CHECK-SAME: reads=(AccessPlan(param=0, map=(0, 1), dims=(0, 1), kept='dense', reduced='unit', vector=True),)
// CHECK-SAME: vector_width=4, index_bits=32), unroll=4)"
// CHECK-SAME: fuser.launch = "grid=[16384, 1, 1] block=[512, 1, 1] smem=0"
// CHECK:      %row_ok = arith.cmpi slt, %block_id_x, %x_size0 : i32
// CHECK:      %end = arith.select %row_ok, %x_size1, %{{.*}} : i32
// CHECK:      scf.for %col = %{{.*}} to %end step %{{.*}} iter_args(%acc_1 = %acc) -> (f32) : i32 {
// CHECK:        %valid = arith.cmpi slt, %col, %end : i32
// CHECK:        %valid_3 = arith.cmpi slt, %col_3, %end : i32
// CHECK:        scf.if %valid {
// CHECK-NEXT:     %{{.*}} = kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:        scf.if %valid_3 {
// CHECK-NEXT:     %{{.*}} = kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:        kernel.comment "reduce fusion.sum x"
// CHECK:        %[[NEW:.*]] = arith.addf %acc_1, %{{.*}} : f32
// CHECK-NEXT:   scf.yield %[[NEW]] : f32
// CHECK:      %s_1 = kernel.block_reduce sum %{{.*}} along x : f32
// CHECK:      scf.if
// CHECK:        kernel.store %s_1, %s[%block_id_x] : f32, !kernel.tensor<f32, 1>, i32

fusion.fusion @sum_outer(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %s = fusion.sum %x [0] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}

// CHECK:      kernel.func @sum_outer_reduction(
// CHECK-SAME: fuser.scheduler = "reduction"
// CHECK-SAME: layout=Layout(inner=False, kept_dims=(1,), reduced_dims=(0,)
// CHECK-SAME: kept='unit', reduced='dense', vector=True
// CHECK-SAME: vector_width=4, index_bits=32), unroll=16)"
// CHECK-SAME: fuser.launch = "grid=[512, 1, 1] block=[8, 16, 1] smem=0"
// CHECK:      %column_ok = arith.cmpi slt, %column, %x_size1 : i32
// CHECK:      scf.for %row = %thread_id_y to %end step %{{.*}} iter_args(%acc_4 = %acc, %acc_5 = %acc_1, %acc_6 = %acc_2, %acc_7 = %acc_3) -> (f32, f32, f32, f32) : i32 {
// CHECK:        kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:      kernel.block_reduce sum %{{.*}} along y : f32
// CHECK:      kernel.block_reduce sum %{{.*}} along y : f32
// CHECK:      kernel.block_reduce sum %{{.*}} along y : f32
// CHECK:      kernel.block_reduce sum %{{.*}} along y : f32
// CHECK:      scf.if
// CHECK:        kernel.store %{{.*}}, %s[%column] : vector<4xf32>, !kernel.tensor<f32, 1>, i32
