// An iota stays between segments, as a reshape does: the program computes it once per signature
// (`host.iota`, with the extent of the fusion.dim it takes) and the kernels read it. A causal mask
// (two iotas compared) before a row max is one kernel; an iota that the fusion returns is copied
// (the program's iota is a constant every call shares).
// RUN: fuser-opt %s -p 'fuser-segment{shapes="64x128"}' | filecheck %s --check-prefix=SEG
// RUN: fuser-opt %s -p 'fuser-segment{shapes="64x128"},fuser-lower-host' | filecheck %s

fusion.fusion @mask(%x: tensor<?x?xf32>) -> (tensor<?xf32>, tensor<?xi64>) {
  %cols = fusion.dim %x[1] : tensor<?x?xf32>
  %j = fusion.iota(%cols) start 0 step 1 : tensor<?xi64>
  %rows = fusion.dim %x[0] : tensor<?x?xf32>
  %i = fusion.iota(%rows) start 0 step 1 : tensor<?xi64>
  %bj = fusion.broadcast_in_dim %j [1] sizes(%rows) : tensor<?xi64> -> tensor<?x?xi64>
  %bi = fusion.broadcast_in_dim %i [0] sizes(%cols) : tensor<?xi64> -> tensor<?x?xi64>
  %keep = fusion.ge %bi, %bj : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi1>
  %ninf = fusion.constant 0xff800000 : f32
  %m = fusion.where %keep, %x, %ninf : (tensor<?x?xi1>, tensor<?x?xf32>, f32) -> tensor<?x?xf32>
  %r = fusion.max %m [1] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %r, %j : tensor<?xf32>, tensor<?xi64>
}

// SEG:      %j = fusion.iota(%cols) start 0 step 1 : tensor<?xi64>
// SEG:      %i = fusion.iota(%rows) start 0 step 1 : tensor<?xi64>
// SEG-NEXT: %r = fusion.segment "reduction" (%x, %j, %i)
// SEG:      %j_copy = fusion.segment "pointwise" (%j)
// SEG:      fusion.output %r, %j_copy : tensor<?xf32>, tensor<?xi64>

// CHECK:      %x_d1 = host.dim %x[1] : tensor<?x?xf32>
// CHECK-NEXT: %j = host.iota(%x_d1) start 0 step 1 : tensor<?xi64>
// CHECK-NEXT: %x_d0 = host.dim %x[0] : tensor<?x?xf32>
// CHECK-NEXT: %i = host.iota(%x_d0) start 0 step 1 : tensor<?xi64>
// CHECK:      host.launch @mask_s0_reduction {{.*}} ins(%x, %j, %i : tensor<?x?xf32>, tensor<?xi64>, tensor<?xi64>) outs(%r : tensor<?xf32>)
// CHECK:      host.launch @mask_s1_pointwise {{.*}} ins(%j : tensor<?xi64>) outs(%j_copy : tensor<?xi64>)
// CHECK-NOT:  host.deallocate
// CHECK:      host.return %r, %j_copy : tensor<?xf32>, tensor<?xi64>
