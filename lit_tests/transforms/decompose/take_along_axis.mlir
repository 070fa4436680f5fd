// fuser-decompose rewrites take_along_axis into an iota compare and a max reduction: the index
// clamped to [0, n - 1] (n - 1 the iota's last element, a one-element view), each position
// compared with it, the input kept where they match and -inf elsewhere, the max taken over the
// gathered dim. One index per row reduces over the input's own shape (keepdim); k per row adds a
// dim of the n candidates. Half inputs are compared in f32 and cast back (exactly).
// RUN: fuser-opt %s -p fuser-decompose | filecheck %s
// RUN: fuser-opt %s -p 'fuser-decompose,fuser-segment{shapes="8x50257,8x1,8x16,8x3"}' | filecheck %s --check-prefix=SEG

fusion.fusion @take(%x: tensor<?x50257xbf16>, %t: tensor<?x1xi64>, %y: tensor<8x?xf32>, %k: tensor<8x3xi32>) -> (tensor<?x1xbf16>, tensor<8x3xf32>) {
  %a = fusion.take_along_axis %x, %t[1] : tensor<?x50257xbf16>, tensor<?x1xi64> -> tensor<?x1xbf16>
  %b = fusion.take_along_axis %y, %k[1] : tensor<8x?xf32>, tensor<8x3xi32> -> tensor<8x3xf32>
  fusion.output %a, %b : tensor<?x1xbf16>, tensor<8x3xf32>
}

// CHECK:      %a_positions = fusion.iota start 0 step 1 : tensor<50257xi64>
// CHECK-NEXT: %a_last = fusion.slice %a_positions [-1:] : tensor<50257xi64> -> tensor<1xi64>
// CHECK:      %a_below = fusion.minimum %t, %a_lasts : tensor<?x1xi64>
// CHECK-NEXT: %a_clamped = fusion.maximum %a_below, %a_zero : (tensor<?x1xi64>, i64) -> tensor<?x1xi64>
// CHECK-NEXT: %a_input = fusion.cast %x : tensor<?x50257xbf16> -> tensor<?x50257xf32>
// CHECK:      %a_hit = fusion.eq %a_each, %a_chosen : (tensor<?x50257xi64>, tensor<?x50257xi64>) -> tensor<?x50257xi1>
// CHECK-NEXT: %a_lowest = fusion.constant 0xff800000 : f32
// CHECK-NEXT: %a_picked = fusion.where %a_hit, %a_input, %a_lowest
// CHECK-NEXT: %a_taken = fusion.max %a_picked [1] keepdim : tensor<?x50257xf32> -> tensor<?x1xf32>
// CHECK-NEXT: %a = fusion.cast %a_taken : tensor<?x1xf32> -> tensor<?x1xbf16>
// CHECK:      %b_positions = fusion.iota(%y_size1) start 0 step 1 : tensor<?xi32>
// CHECK-NEXT: %b_last = fusion.slice %b_positions [-1:] : tensor<?xi32> -> tensor<?xi32>
// CHECK-NEXT: %b_last1 = fusion.reshape %b_last : tensor<?xi32> -> tensor<1xi32>
// CHECK:      %b_values = fusion.broadcast_in_dim %y [0, 2] : tensor<8x?xf32> -> tensor<8x3x?xf32>
// CHECK:      %b_hit = fusion.eq %b_each, %b_chosen : (tensor<8x3x?xi32>, tensor<8x3x?xi32>) -> tensor<8x3x?xi1>
// CHECK:      %b = fusion.max %b_picked [2] : tensor<8x3x?xf32> -> tensor<8x3xf32>
// CHECK-NOT:  take_along_axis

// SEG:      fusion.segment "reduction"
// SEG:      fusion.segment "reduction"
// SEG-NOT:  fusion.segment
