// RMS norm on two GPUs, the hidden axis split over them: `fuser-opt examples/rms_norm_sharded.mlir -p 'fuser-shard{rank=1}'` prints rank 1's program.
fusion.fusion @rms_norm(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>, #fusion.sharding<mesh [0, 1], axis 0>]} {
  %xf = fusion.cast %x : tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %sq = fusion.mul %xf, %xf : tensor<?x4096xf32>
  %ss = fusion.sum %sq [1] keepdim : tensor<?x4096xf32> -> tensor<?x1xf32>
  %h = fusion.constant 4.096000e+03 : f32
  %ms = fusion.div %ss, %h : (tensor<?x1xf32>, f32) -> tensor<?x1xf32>
  %eps = fusion.constant 1.000000e-06 : f32
  %v = fusion.add %ms, %eps : (tensor<?x1xf32>, f32) -> tensor<?x1xf32>
  %inv = fusion.rsqrt %v : tensor<?x1xf32>
  %invb = fusion.broadcast_in_dim %inv [0, 1] : tensor<?x1xf32> -> tensor<?x4096xf32>
  %n = fusion.mul %xf, %invb : tensor<?x4096xf32>
  %m = fusion.dim %x[0] : tensor<?x4096xbf16>
  %wb = fusion.broadcast_in_dim %w [1] sizes(%m) : tensor<4096xbf16> -> tensor<?x4096xbf16>
  %wf = fusion.cast %wb : tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %yf = fusion.mul %n, %wf : tensor<?x4096xf32>
  %y = fusion.cast %yf : tensor<?x4096xf32> -> tensor<?x4096xbf16>
  fusion.output %y : tensor<?x4096xbf16>
}
