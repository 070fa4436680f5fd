// split-reductions on RMS norm backward: the column sum dw (over dim 0) beside the row sum c
// (over dim 1) becomes partial sums over chunks of rows, a segment_set and the sum of the
// chunks. 4097 rows of 4096 bf16 on 132 SMs: min(2 x 132, 4097 / 8) = 264 chunks of 16 rows
// (2 chunks per SM fill them with blocks of about 256 threads). 15 rows make one chunk of 8
// and are left alone; `splits` forces a factor; fuser-compile then gives an inner_outer kernel
// (row sums, dx, partial sums) and a reduction kernel (the sum of the chunks).
// RUN: fuser-opt %s -p 'split-reductions{shapes="4097x4096,4097x4096,4097,4096"}' | filecheck %s
// RUN: fuser-opt %s -p 'split-reductions{shapes="15x4096,15x4096,15,4096"}' | filecheck %s --check-prefix=FEW
// RUN: fuser-opt %s -p 'split-reductions{splits=3}' | filecheck %s --check-prefix=FORCED
// RUN: fuser-opt %s -p 'fuser-compile{shapes="4097x4096,4097x4096,4097,4096"}' | filecheck %s --check-prefix=COMPILE
// RUN: not fuser-opt %s -p 'split-reductions{splits=0}' 2>&1 | filecheck %s --check-prefix=ZERO

fusion.fusion @rms_bwd(%dy: tensor<?x?xbf16>, %x: tensor<?x?xbf16>, %rstd: tensor<?xf32>, %w: tensor<?xbf16>) -> (tensor<?x?xbf16>, tensor<?xbf16>) {
  %n = fusion.dim %x[0] : tensor<?x?xbf16>
  %h = fusion.dim %x[1] : tensor<?x?xbf16>
  %dyf = fusion.cast %dy : tensor<?x?xbf16> -> tensor<?x?xf32>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %wf = fusion.cast %w : tensor<?xbf16> -> tensor<?xf32>
  %rb = fusion.broadcast_in_dim %rstd [0] sizes(%h) : tensor<?xf32> -> tensor<?x?xf32>
  %wb = fusion.broadcast_in_dim %wf [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %xhat = fusion.mul %xf, %rb : tensor<?x?xf32>
  %dxhat = fusion.mul %dyf, %wb : tensor<?x?xf32>
  %g = fusion.mul %dyf, %xhat : tensor<?x?xf32>
  %dw32 = fusion.sum %g [0] : tensor<?x?xf32> -> tensor<?xf32>
  %p = fusion.mul %dxhat, %xhat : tensor<?x?xf32>
  %c = fusion.sum %p [1] : tensor<?x?xf32> -> tensor<?xf32>
  %cb = fusion.broadcast_in_dim %c [0] sizes(%h) : tensor<?xf32> -> tensor<?x?xf32>
  %t = fusion.mul %xhat, %cb : tensor<?x?xf32>
  %d = fusion.sub %dxhat, %t : tensor<?x?xf32>
  %dxf = fusion.mul %rb, %d : tensor<?x?xf32>
  %dx = fusion.cast %dxf : tensor<?x?xf32> -> tensor<?x?xbf16>
  %dw = fusion.cast %dw32 : tensor<?xf32> -> tensor<?xbf16>
  fusion.output %dx, %dw : tensor<?x?xbf16>, tensor<?xbf16>
}

// CHECK:      %g = fusion.mul %dyf, %xhat : tensor<?x?xf32>
// CHECK-NEXT: %dw32_partial = fusion.partial_sum %g [0] splits(264) : tensor<?x?xf32> -> tensor<264x?xf32>
// CHECK-NEXT: %dw32_partials = fusion.segment_set %dw32_partial : tensor<264x?xf32>
// CHECK-NEXT: %dw32 = fusion.sum %dw32_partials [0] : tensor<264x?xf32> -> tensor<?xf32>
// CHECK:      %c = fusion.sum %p [1] : tensor<?x?xf32> -> tensor<?xf32>

// FEW-NOT:    partial_sum
// FEW:        %dw32 = fusion.sum %g [0] : tensor<?x?xf32> -> tensor<?xf32>

// FORCED:     %dw32_partial = fusion.partial_sum %g [0] splits(3) : tensor<?x?xf32> -> tensor<3x?xf32>

// COMPILE:      host.launch @rms_bwd_s0_inner_outer grid(%{{.*}}) block [{{[0-9]+}}, 1, 1]
// COMPILE:      host.launch @rms_bwd_s1_reduction
// COMPILE:      kernel.func @rms_bwd_s0_inner_outer
// COMPILE-SAME: fuser.scheduler = "inner_outer"
// COMPILE:      kernel.func @rms_bwd_s1_reduction
// COMPILE-SAME: fuser.scheduler = "reduction"

// ZERO: split-reductions: splits must be at least 1 (1 never splits), got 0
