// Host lowering of a row max feeding a column sum: two reduction launches; the row maxima
// (one per row of %x) are freed after the column sum.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8192x1024"},fuser-lower-host' | filecheck %s

fusion.fusion @row_max_col_sum(%x: tensor<?x?xbf16>) -> (tensor<?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %m = fusion.max %xf [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mb = fusion.broadcast_in_dim %m [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %c = fusion.sub %xf, %mb : tensor<?x?xf32>
  %s = fusion.sum %c [0] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %s : tensor<?xf32>
}

// CHECK:      host.program @row_max_col_sum(%x: tensor<?x?xbf16>) -> tensor<?xf32> attributes {fuser.shapes = "8192x1024"} {
// CHECK-NEXT:   %x_d0 = host.dim %x[0] : tensor<?x?xbf16>
// CHECK-NEXT:   %m = host.allocate(%x_d0) : tensor<?xf32>
// CHECK:        host.launch @row_max_col_sum_s0_reduction grid({{.*}}) block [{{.*}}] smem {{[0-9]+}} ins(%x : tensor<?x?xbf16>) outs(%m : tensor<?xf32>)
// CHECK-NEXT:   %x_d1 = host.dim %x[1] : tensor<?x?xbf16>
// CHECK-NEXT:   %s = host.allocate(%x_d1) : tensor<?xf32>
// CHECK:        host.launch @row_max_col_sum_s1_reduction grid({{.*}}) block [{{.*}}] smem {{[0-9]+}} ins(%x, %m : tensor<?x?xbf16>, tensor<?xf32>) outs(%s : tensor<?xf32>)
// CHECK-NEXT:   host.deallocate %m : tensor<?xf32>
// CHECK-NEXT:   host.return %s : tensor<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: kernel.func @row_max_col_sum_s0_reduction(%x: !kernel.tensor<bf16, 2>, %m: !kernel.tensor<f32, 1>)
// CHECK:      kernel.func @row_max_col_sum_s1_reduction(%x: !kernel.tensor<bf16, 2>, %m: !kernel.tensor<f32, 1>, %s: !kernel.tensor<f32, 1>)
