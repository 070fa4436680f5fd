// Host lowering of a five-segment fusion: column max, row softmax, the weighted tanh (two
// segment_sets), a column sum and a row sum. Five launches, outputs %y, %cs and %gs kept.
// RUN: fuser-opt %s -p 'fuser-segment{shapes="1000x3000,3000"},fuser-lower-host' | filecheck %s

fusion.fusion @five(%x: tensor<?x?xbf16>, %w: tensor<?xf32>)
    -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xbf16>
  %d = fusion.dim %x[1] : tensor<?x?xbf16>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %cm = fusion.max %xf [0] : tensor<?x?xf32> -> tensor<?xf32>
  %cmb = fusion.broadcast_in_dim %cm [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %c = fusion.sub %xf, %cmb : tensor<?x?xf32>
  %e = fusion.exp %c : tensor<?x?xf32>
  %rs = fusion.sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %rsb = fusion.broadcast_in_dim %rs [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %p = fusion.div %e, %rsb : tensor<?x?xf32>
  %ps = fusion.segment_set %p : tensor<?x?xf32>
  %wb = fusion.broadcast_in_dim %w [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %q = fusion.mul %ps, %wb : tensor<?x?xf32>
  %t = fusion.tanh %q : tensor<?x?xf32>
  %ts = fusion.segment_set %t : tensor<?x?xf32>
  %cs = fusion.sum %ts [0] : tensor<?x?xf32> -> tensor<?xf32>
  %csb = fusion.broadcast_in_dim %cs [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %g = fusion.mul %ts, %csb : tensor<?x?xf32>
  %gs = fusion.sum %g [1] : tensor<?x?xf32> -> tensor<?xf32>
  %y = fusion.cast %t : tensor<?x?xf32> -> tensor<?x?xbf16>
  fusion.output %y, %cs, %gs : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
}

// CHECK:      host.program @five(%x: tensor<?x?xbf16>, %w: tensor<?xf32>) -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) attributes {fuser.shapes = "1000x3000,3000"} {
// CHECK-NEXT:   %x_d1 = host.dim %x[1] : tensor<?x?xbf16>
// CHECK-NEXT:   %cm = host.allocate(%x_d1) : tensor<?xf32>
// CHECK:        host.launch @five_s0_reduction grid({{.*}} ins(%x : tensor<?x?xbf16>) outs(%cm : tensor<?xf32>)
// CHECK-NEXT:   %x_d0 = host.dim %x[0] : tensor<?x?xbf16>
// CHECK-NEXT:   %ps = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        host.launch @five_s1_persistent grid({{.*}} ins(%x, %cm : tensor<?x?xbf16>, tensor<?xf32>) outs(%ps : tensor<?x?xf32>)
// CHECK-NEXT:   host.deallocate %cm : tensor<?xf32>
// CHECK-NEXT:   %y = host.allocate(%x_d0, %x_d1) : tensor<?x?xbf16>
// CHECK-NEXT:   %ts = host.allocate(%x_d0, %x_d1) : tensor<?x?xf32>
// CHECK:        host.launch @five_s2_pointwise grid({{.*}} ins(%w, %ps : tensor<?xf32>, tensor<?x?xf32>) outs(%y, %ts : tensor<?x?xbf16>, tensor<?x?xf32>)
// CHECK-NEXT:   host.deallocate %ps : tensor<?x?xf32>
// CHECK-NEXT:   %cs = host.allocate(%x_d1) : tensor<?xf32>
// CHECK:        host.launch @five_s3_reduction grid({{.*}} ins(%ts : tensor<?x?xf32>) outs(%cs : tensor<?xf32>)
// CHECK-NEXT:   %gs = host.allocate(%x_d0) : tensor<?xf32>
// CHECK:        host.launch @five_s4_reduction grid({{.*}} ins(%ts, %cs : tensor<?x?xf32>, tensor<?xf32>) outs(%gs : tensor<?xf32>)
// CHECK-NEXT:   host.deallocate %ts : tensor<?x?xf32>
// CHECK-NEXT:   host.return %y, %cs, %gs : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
// CHECK-NEXT: }
