// examples/rms_norm_sharded.mlir: RMS norm with the hidden axis split over two devices:
// rank 1's program is a stage of partial sums of squares, one allreduce of them, and a stage of
// the local epilogue. The cast of x is recomputed in the second stage (no f32 copy of x is
// written), and the broadcast of the statistics is made at the device's extent.
// RUN: fuser-opt %S/../../../examples/rms_norm_sharded.mlir -p 'fuser-shard{rank=1}' | filecheck %s
// RUN: fuser-opt %S/../../../examples/rms_norm_sharded.mlir -p 'fuser-shard{rank=0}' | filecheck %s --check-prefix=RANK0

// CHECK:      fusion.fusion @rms_norm_r1_s0(%x: tensor<?x2048xbf16>) -> tensor<?x1xf32> {
// CHECK-NEXT:   %xf = fusion.cast %x : tensor<?x2048xbf16> -> tensor<?x2048xf32>
// CHECK-NEXT:   %sq = fusion.mul %xf, %xf : tensor<?x2048xf32>
// CHECK-NEXT:   %ss = fusion.sum %sq [1] keepdim : tensor<?x2048xf32> -> tensor<?x1xf32>
// CHECK-NEXT:   fusion.output %ss : tensor<?x1xf32>
// CHECK:      fusion.fusion @rms_norm_r1_s1(%ss: tensor<?x1xf32>, %x: tensor<?x2048xbf16>, %w: tensor<2048xbf16>) -> tensor<?x2048xbf16> {
// CHECK:        %invb_block = fusion.broadcast_in_dim %inv [0, 1] : tensor<?x1xf32> -> tensor<?x2048xf32>
// CHECK-NEXT:   %xf = fusion.cast %x : tensor<?x2048xbf16> -> tensor<?x2048xf32>
// CHECK:        %wb = fusion.broadcast_in_dim %w [1] sizes(%m) : tensor<2048xbf16> -> tensor<?x2048xbf16>
// CHECK:        fusion.output %y : tensor<?x2048xbf16>
// CHECK:      host.program @rms_norm(%x: tensor<?x2048xbf16>, %w: tensor<2048xbf16>) -> tensor<?x2048xbf16> attributes {fuser.rank = 1 : i64} {
// CHECK-NEXT:   %ss = host.run_fusion @rms_norm_r1_s0(%x) : (tensor<?x2048xbf16>) -> tensor<?x1xf32>
// CHECK-NEXT:   %ss_1, %ss_work = host.allreduce sum %ss mesh [0, 1] : tensor<?x1xf32> -> tensor<?x1xf32>
// CHECK-NEXT:   host.wait %ss_work
// CHECK-NEXT:   %y = host.run_fusion @rms_norm_r1_s1(%ss_1, %x, %w) : (tensor<?x1xf32>, tensor<?x2048xbf16>, tensor<2048xbf16>) -> tensor<?x2048xbf16>
// CHECK-NEXT:   host.return %y : tensor<?x2048xbf16>

// RANK0: fusion.fusion @rms_norm_r0_s0
// RANK0: host.program @rms_norm({{.*}} attributes {fuser.rank = 0 : i64}
