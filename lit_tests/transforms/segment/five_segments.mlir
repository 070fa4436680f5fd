// Five segments of three kinds (for the GPU tests of the host program): a column max (outer
// reduction), a softmax-like row normalization that reads it (persistent) and ends at a
// segment_set, a scaled tanh (pointwise) ending at another, a column sum (reduction), and a row
// sum of a product with the broadcast column sums (reduction; it cannot join the column sum, whose
// axis differs).
// RUN: fuser-opt %s -p 'fuser-segment{shapes="1000x3000,3000"}' | filecheck %s

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

// CHECK:      %cm = fusion.segment "reduction" (%x) : (tensor<?x?xbf16>) -> (tensor<?xf32>) {
// CHECK:        fusion.max
// CHECK:      %ps = fusion.segment "persistent" (%x, %cm) : (tensor<?x?xbf16>, tensor<?xf32>) -> (tensor<?x?xf32>) {
// CHECK:        fusion.sum %e [1]
// CHECK:        fusion.div
// CHECK-NEXT:   fusion.set
// CHECK:      %y, %ts = fusion.segment "pointwise" (%w, %ps) : (tensor<?xf32>, tensor<?x?xf32>) -> (tensor<?x?xbf16>, tensor<?x?xf32>) {
// CHECK:        fusion.dim %{{.*}}[0] : tensor<?x?xf32>
// CHECK:        fusion.tanh
// CHECK:      %cs = fusion.segment "reduction" (%ts) : (tensor<?x?xf32>) -> (tensor<?xf32>) {
// CHECK:        fusion.sum %{{.*}} [0]
// CHECK:      %gs = fusion.segment "reduction" (%ts, %cs) : (tensor<?x?xf32>, tensor<?xf32>) -> (tensor<?xf32>) {
// CHECK:        fusion.sum %g [1]
// CHECK:      fusion.output %y, %cs, %gs : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
// CHECK-NOT:  fusion.segment
