// 64-bit indexing only when an extent or offset needs it: 65536 x 65536 elements (2**32) do,
// 46000 x 46000 do not.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="65536x65536"}' | filecheck %s --check-prefix=I64
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="46000x46000"}' | filecheck %s --check-prefix=I32

fusion.fusion @neg(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %y = fusion.neg %x : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// I64:      vector_width=4, unroll=4, index_bits=64, grid_2d=False
// I64-SAME: fuser.launch = "grid=[2097152, 1, 1] block=[128, 1, 1] smem=0"
// I64:      %thread_id_x = kernel.thread_id x : i64
// I64-NEXT: %block_id_x = kernel.block_id x : i64
// I64-NOT:  arith.trunci
// I64:      %vectors = arith.divsi %{{.*}}, %{{.*}} : i64
// I64:      kernel.load %x[%elem] : !kernel.tensor<f32, 2>, i64 -> vector<4xf32>

// I32:      index_bits=32, grid_2d=True
// I32-SAME: fuser.launch = "grid=[23, 46000, 1] block=[128, 1, 1] smem=0"
// I32:      %thread_id_x = kernel.thread_id x : i32
// I32:      arith.trunci %{{.*}} : i64 to i32
