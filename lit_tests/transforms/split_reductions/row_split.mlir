// split-reductions on a sum of a few long rows: 16 rows of 4194304 f32 on 132 SMs take
// ceil(132 / 16) = 9 runs a row, moved up to 16 (runs of 262144: whole 16-byte vectors), each
// summed by a block of the reduction scheduler's row split (grid 16 x 16), then a second
// reduction sums the 16 runs of each row. 4096 rows fill the GPU and rows of 1000 are too
// short: left alone; `splits` forces a factor. (A transposed input, not split, needs strides:
// the CPU test test_what_a_row_split_leaves_whole has it.)
// RUN: fuser-opt %s -p 'split-reductions{shapes="16x4194304"}' | filecheck %s
// RUN: fuser-opt %s -p 'split-reductions{shapes="4096x4096"}' | filecheck %s --check-prefix=WHOLE
// RUN: fuser-opt %s -p 'split-reductions{shapes="16x1000"}' | filecheck %s --check-prefix=WHOLE
// RUN: fuser-opt %s -p 'split-reductions{splits=3}' | filecheck %s --check-prefix=FORCED
// RUN: fuser-opt %s -p 'fuser-compile{shapes="16x4194304"}' | filecheck %s --check-prefix=COMPILE

fusion.fusion @row_sums(%x: tensor<?x?xf32>) -> (tensor<?xf32>) {
  %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}

// CHECK:      %s_partial = fusion.partial_sum %x [1] splits(16) : tensor<?x?xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %s_partials = fusion.segment_set %s_partial : tensor<?x16xf32>
// CHECK-NEXT: %s = fusion.sum %s_partials [1] : tensor<?x16xf32> -> tensor<?xf32>
// CHECK-NEXT: fusion.output %s : tensor<?xf32>

// WHOLE:     %s = fusion.sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
// WHOLE-NOT: partial_sum

// FORCED: fusion.partial_sum %x [1] splits(3) : tensor<?x?xf32> -> tensor<?x3xf32>

// COMPILE: host.launch @row_sums_s0_reduction grid({{.*}}) block [1024, 1, 1] smem 0 ins(%x : tensor<?x?xf32>) outs(%s_partials : tensor<?x16xf32>)
// COMPILE: host.launch @row_sums_s1_reduction
// COMPILE: kernel.func @row_sums_s0_reduction({{.*}}fuser.launch = "grid=[16, 16, 1] block=[1024, 1, 1] smem=0"
// COMPILE: %block_id_y = kernel.block_id y : i32
// COMPILE: %chunk = arith.divsi
