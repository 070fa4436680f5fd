// take_along_axis is no op fuser-decompose rewrites: the pointwise kernel loads the input at the
// index (one load per result element): each take here is a pointwise segment (of its own: their
// results' shapes differ).
// RUN: fuser-opt %s -p fuser-decompose | filecheck %s
// RUN: fuser-opt %s -p 'fuser-decompose,fuser-segment{shapes="8x50257,8x1,8x16,8x3"}' | filecheck %s --check-prefix=SEG

fusion.fusion @take(%x: tensor<?x50257xbf16>, %t: tensor<?x1xi64>, %y: tensor<8x?xf32>, %k: tensor<8x3xi32>) -> (tensor<?x1xbf16>, tensor<8x3xf32>) {
  %a = fusion.take_along_axis %x, %t[1] : tensor<?x50257xbf16>, tensor<?x1xi64> -> tensor<?x1xbf16>
  %b = fusion.take_along_axis %y, %k[1] : tensor<8x?xf32>, tensor<8x3xi32> -> tensor<8x3xf32>
  fusion.output %a, %b : tensor<?x1xbf16>, tensor<8x3xf32>
}

// CHECK:      %a = fusion.take_along_axis %x, %t[1] : tensor<?x50257xbf16>, tensor<?x1xi64> -> tensor<?x1xbf16>
// CHECK-NEXT: %b = fusion.take_along_axis %y, %k[1] : tensor<8x?xf32>, tensor<8x3xi32> -> tensor<8x3xf32>
// CHECK-NOT:  fusion.iota

// SEG:      fusion.segment "pointwise" (%x, %t)
// SEG:      fusion.take_along_axis %x_1, %t_1[1]
// SEG:      fusion.segment "pointwise" (%y, %k)
// SEG:      fusion.take_along_axis %y_1, %k_1[1]
// SEG-NOT:  fusion.segment
