// split-reductions on layer norm backward: dw and db (two column sums beside the row sums of
// dx) become partial sums over chunks of rows; fuser-compile gives an inner_outer kernel (row
// sums, dx and both partial sums) and one reduction kernel that sums the chunks of both weight
// gradients (the segmenter's finish merge). The inner_outer kernel keeps its partial sums in
// dynamic shared memory and copies each row's dy and x there a row ahead (cp.async, two
// buffers): 264 blocks of 128 threads, 32 slots each: 2 x 16 KiB of sums and 2 x 16 KiB of
// buffers, the launch's smem.
// RUN: fuser-opt %s -p 'fuser-compile{shapes="16384x4096,16384x4096,16384,16384,4096"}' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-compile{shapes="16384x4096,16384x4096,16384,16384,4096"}' -t cuda | filecheck %s --check-prefix=CUDA

fusion.fusion @ln_bwd(%dy: tensor<?x?xbf16>, %x: tensor<?x?xbf16>, %mean: tensor<?xf32>, %rstd: tensor<?xf32>, %w: tensor<?xbf16>) -> (tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xbf16>
  %h = fusion.dim %x[1] : tensor<?x?xbf16>
  %dyf = fusion.cast %dy : tensor<?x?xbf16> -> tensor<?x?xf32>
  %xf = fusion.cast %x : tensor<?x?xbf16> -> tensor<?x?xf32>
  %wf = fusion.cast %w : tensor<?xbf16> -> tensor<?xf32>
  %mb = fusion.broadcast_in_dim %mean [0] sizes(%h) : tensor<?xf32> -> tensor<?x?xf32>
  %rb = fusion.broadcast_in_dim %rstd [0] sizes(%h) : tensor<?xf32> -> tensor<?x?xf32>
  %wb = fusion.broadcast_in_dim %wf [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %xc = fusion.sub %xf, %mb : tensor<?x?xf32>
  %xhat = fusion.mul %xc, %rb : tensor<?x?xf32>
  %dxhat = fusion.mul %dyf, %wb : tensor<?x?xf32>
  %c1 = fusion.sum %dxhat [1] : tensor<?x?xf32> -> tensor<?xf32>
  %p = fusion.mul %dxhat, %xhat : tensor<?x?xf32>
  %c2 = fusion.sum %p [1] : tensor<?x?xf32> -> tensor<?xf32>
  %c1b = fusion.broadcast_in_dim %c1 [0] sizes(%h) : tensor<?xf32> -> tensor<?x?xf32>
  %c2b = fusion.broadcast_in_dim %c2 [0] sizes(%h) : tensor<?xf32> -> tensor<?x?xf32>
  %t = fusion.mul %xhat, %c2b : tensor<?x?xf32>
  %d1 = fusion.sub %dxhat, %c1b : tensor<?x?xf32>
  %d2 = fusion.sub %d1, %t : tensor<?x?xf32>
  %dxf = fusion.mul %rb, %d2 : tensor<?x?xf32>
  %dx = fusion.cast %dxf : tensor<?x?xf32> -> tensor<?x?xbf16>
  %g = fusion.mul %dyf, %xhat : tensor<?x?xf32>
  %dw = fusion.sum %g [0] : tensor<?x?xf32> -> tensor<?xf32>
  %db = fusion.sum %dyf [0] : tensor<?x?xf32> -> tensor<?xf32>
  fusion.output %dx, %dw, %db : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xf32>
}

// CHECK:      host.launch @ln_bwd_s0_inner_outer grid(%{{.*}}) block [128, 1, 1] smem 65536
// CHECK:      host.launch @ln_bwd_s1_reduction {{.*}} ins(%dw_partials, %db_partials : {{.*}}) outs(%dw, %db :
// CHECK-NOT:  host.launch
// CHECK:      kernel.func @ln_bwd_s0_inner_outer
// CHECK-SAME: fuser.scheduler = "inner_outer"
// CHECK-SAME: fuser.launch = "grid=[264, 1, 1] block=[128, 1, 1] smem=65536"
// CHECK:      kernel.alloc : !kernel.array<4096xf32, dynamic>
// CHECK:      kernel.alloc : !kernel.array<4096xf32, dynamic>
// CHECK:      kernel.alloc : !kernel.array<8192xbf16, dynamic>
// CHECK:      kernel.alloc : !kernel.array<8192xbf16, dynamic>
// CHECK:      kernel.copy_async {{.*}} elements 8 if
// CHECK:      kernel.copy_async_commit
// CHECK:      kernel.copy_async_wait pending 1
// CHECK:      kernel.copy_async_wait pending 0
// CHECK:      kernel.func @ln_bwd_s1_reduction
// CHECK-SAME: fuser.scheduler = "reduction"

// CUDA:      #include "fuser/copy.cuh"
// CUDA:      extern __shared__ __align__(16) unsigned char fuser_dynamic_shared[];
// CUDA:      float* {{.*}}_sums = reinterpret_cast<float*>(fuser_dynamic_shared + 0);
// CUDA:      fuser::copy_async<16>(
// CUDA:      fuser::copy_async_commit();
// CUDA:      fuser::copy_async_wait<1>();
