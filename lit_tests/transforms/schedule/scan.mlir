// cumsum along rows and cummax along columns of [8192, 4096] f32: the scan scheduler's row
// template (a warp per row, 8 rows a block, 16-byte loads, four in flight per thread, the
// thread's four elements scanned in registers, the lanes before it from kernel.block_scan, the
// row's tiles before it carried in `running`) and its column template (a thread per column,
// eight steps loaded ahead).
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="8192x4096"}' | filecheck %s

fusion.fusion @cumsum_rows(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %s = fusion.cumsum %x along 1 : tensor<?x?xf32>
  fusion.output %s : tensor<?x?xf32>
}

// CHECK:      kernel.func @cumsum_rows_scan(%x: !kernel.tensor<f32, 2>, %s: !kernel.tensor<f32, 2>)
// CHECK-SAME: fuser.scheduler = "scan"
// CHECK-SAME: fuser.params = "ScanParams(block=(32, 8, 1), along_rows=True, vector_width=4, unroll=4, index_bits=32)"
// CHECK-SAME: fuser.launch = "grid=[1024, 1, 1] block=[32, 8, 1] smem=0"
// CHECK:      %running = kernel.alloc : !kernel.array<1xf32, local>
// CHECK:      scf.for %tile = %{{.*}} to %s_size1 step %{{.*}} : i32 {
// CHECK:        kernel.comment "load the tile's vectors"
// CHECK:        kernel.load %x[%{{.*}}] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// CHECK:        kernel.comment "scan the thread's 4 elements"
// CHECK:        %thread_total = arith.addf
// CHECK:        kernel.comment "fusion.cumsum: the threads before this one, and the row's tiles before"
// CHECK-NEXT:   %before, %total = kernel.block_scan sum %thread_total along x : f32
// CHECK-NEXT:   %carried = kernel.array_load %running
// CHECK-NEXT:   %prefix = arith.addf %carried, %before : f32
// CHECK-NEXT:   %[[NEXT:.*]] = arith.addf %carried, %total : f32
// CHECK-NEXT:   kernel.array_store %[[NEXT]], %running
// CHECK:        kernel.store %{{.*}}, %s[%{{.*}}] : vector<4xf32>, !kernel.tensor<f32, 2>, i32

fusion.fusion @cummax_columns(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %m = fusion.cummax %x along 0 : tensor<?x?xf32>
  fusion.output %m : tensor<?x?xf32>
}

// CHECK:      kernel.func @cummax_columns_scan(%x: !kernel.tensor<f32, 2>, %m: !kernel.tensor<f32, 2>)
// CHECK-SAME: fuser.params = "ScanParams(block=(128, 1, 1), along_rows=False, vector_width=1, unroll=8, index_bits=32)"
// CHECK-SAME: fuser.launch = "grid=[32, 1, 1] block=[128, 1, 1] smem=0"
// CHECK:      scf.for %step = %{{.*}} to %m_size0 step %{{.*}} : i32 {
// CHECK:        kernel.comment "fusion.cummax: the column's running value"
// CHECK:        arith.maximumf
