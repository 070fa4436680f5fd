// fuser-decompose rewrites scatter into an iota compare and a where: each position of the
// input's dim compared with the index and with the index plus the extent (n, the iota's last
// element plus one: an index in [-n, 0) counts from the end; any other index matches nothing,
// so it writes nothing). One index per row compares over the input's own shape: pointwise. k per
// row add a dim of the k candidates, which max reductions fold: whether any wrote the element,
// and the largest value written (in f32 for half types).
// RUN: fuser-opt %s -p fuser-decompose | filecheck %s
// RUN: fuser-opt %s -p 'fuser-decompose,fuser-segment{shapes="8x50,8x1,8x3,8x3"}' | filecheck %s --check-prefix=SEG

fusion.fusion @scatter(%x: tensor<?x50xbf16>, %t: tensor<?x1xi64>, %k: tensor<8x3xi32>, %v: tensor<8x3xbf16>) -> (tensor<?x50xbf16>, tensor<?x50xbf16>) {
  %c = fusion.constant 0.0 : bf16
  %a = fusion.scatter %x, %t, %c[1] : tensor<?x50xbf16>, tensor<?x1xi64>, bf16 -> tensor<?x50xbf16>
  %b = fusion.scatter %x, %k, %v[1] : tensor<?x50xbf16>, tensor<8x3xi32>, tensor<8x3xbf16> -> tensor<?x50xbf16>
  fusion.output %a, %b : tensor<?x50xbf16>, tensor<?x50xbf16>
}

// CHECK:      %a_positions = fusion.iota start 0 step 1 : tensor<50xi64>
// CHECK-NEXT: %a_last = fusion.slice %a_positions [-1:] : tensor<50xi64> -> tensor<1xi64>
// CHECK-NEXT: %a_one = fusion.constant 1 : i64
// CHECK-NEXT: %a_count = fusion.add %a_last, %a_one : (tensor<1xi64>, i64) -> tensor<1xi64>
// CHECK:      %a_direct = fusion.eq %a_each, %a_index : (tensor<?x50xi64>, tensor<?x50xi64>) -> tensor<?x50xi1>
// CHECK-NEXT: %a_from_end = fusion.eq %a_each, %a_wrapped
// CHECK-NEXT: %a_hit = fusion.where %a_direct, %a_direct, %a_from_end : tensor<?x50xi1>
// CHECK-NEXT: %a = fusion.where %a_hit, %c, %x : (tensor<?x50xi1>, bf16, tensor<?x50xbf16>) -> tensor<?x50xbf16>
// CHECK:      %b_positions = fusion.iota start 0 step 1 : tensor<50xi32>
// CHECK:      %b_each = fusion.broadcast_in_dim %b_positions [1] sizes(%{{.*}}) : tensor<50xi32> -> tensor<?x50x3xi32>
// CHECK:      %b_hits = fusion.where %b_hit, %b_c1, %b_c0
// CHECK-NEXT: %b_times = fusion.max %b_hits [2] : tensor<?x50x3xi32> -> tensor<?x50xi32>
// CHECK-NEXT: %b_written = fusion.gt %b_times, %b_c0 : (tensor<?x50xi32>, i32) -> tensor<?x50xi1>
// CHECK-NEXT: %b_src = fusion.cast %v : tensor<8x3xbf16> -> tensor<8x3xf32>
// CHECK:      %b_best = fusion.max %b_picked [2] : tensor<?x50x3xf32> -> tensor<?x50xf32>
// CHECK-NEXT: %b_value = fusion.cast %b_best : tensor<?x50xf32> -> tensor<?x50xbf16>
// CHECK-NEXT: %b = fusion.where %b_written, %b_value, %x : (tensor<?x50xi1>, tensor<?x50xbf16>, tensor<?x50xbf16>) -> tensor<?x50xbf16>
// CHECK-NOT:  fusion.scatter

// Both share one reduction kernel (the iotas, and the last elements viewed, its inputs):
// SEG:      %a, %b = fusion.segment "reduction"
// SEG-NOT:  fusion.segment
