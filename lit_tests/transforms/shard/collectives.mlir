// Each resharding becomes its communication (rank 0's programs).
// RUN: fuser-opt %s --split-input-file -p 'fuser-shard{rank=0}' | filecheck %s
// RUN: fuser-opt %s --split-input-file -p 'fuser-shard{rank=1}' | filecheck %s --check-prefix=RANK1

// Layer norm's two sums over the split axis: one allreduce of both (one NCCL group).
fusion.fusion @stats(%x: tensor<?x8xf32>) -> (tensor<?xf32>, tensor<?xf32>) attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>]} {
  %s1 = fusion.sum %x [1] : tensor<?x8xf32> -> tensor<?xf32>
  %x2 = fusion.mul %x, %x : tensor<?x8xf32>
  %s2 = fusion.sum %x2 [1] : tensor<?x8xf32> -> tensor<?xf32>
  fusion.output %s1, %s2 : tensor<?xf32>, tensor<?xf32>
}
// CHECK:      host.program @stats
// CHECK-NEXT:   %s1, %s2 = host.run_fusion @stats_r0_s0(%x)
// CHECK-NEXT:   %s1_1, %s2_1, %s1_work = host.allreduce sum %s1, %s2 mesh [0, 1] : tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>, tensor<?xf32>
// CHECK-NEXT:   host.wait %s1_work
// CHECK-NEXT:   host.return %s1_1, %s2_1

// -----

// A split tensor gathered: fd.ops.set with a replicated sharding.
fusion.fusion @gather(%x: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>]} {
  %e = fusion.exp %x : tensor<?x8xf32>
  %g = fusion.set %e {fusion.sharding = #fusion.sharding<mesh [0, 1]>} : tensor<?x8xf32>
  fusion.output %g : tensor<?x8xf32>
}
// CHECK:      fusion.fusion @gather_r0_s0(%x: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:      host.program @gather(%x: tensor<?x4xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:   %e = host.run_fusion @gather_r0_s0(%x)
// CHECK-NEXT:   %g, %g_work = host.allgather %e along 1 mesh [0, 1] : tensor<?x4xf32> -> tensor<?x8xf32>
// CHECK-NEXT:   host.wait %g_work
// CHECK-NEXT:   host.return %g

// -----

// A sum over the split axis, placed split along the kept axis: a reduce-scatter.
fusion.fusion @scatter(%x: tensor<8x6xf32>) -> tensor<8xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>]} {
  %s = fusion.sum %x [1] {fusion.sharding = #fusion.sharding<mesh [0, 1], axis 0>} : tensor<8x6xf32> -> tensor<8xf32>
  fusion.output %s : tensor<8xf32>
}
// CHECK:      host.program @scatter(%x: tensor<8x3xf32>) -> tensor<4xf32>
// CHECK-NEXT:   %s = host.run_fusion @scatter_r0_s0(%x) : (tensor<8x3xf32>) -> tensor<8xf32>
// CHECK-NEXT:   %s_1, %s_work = host.reduce_scatter sum %s along 0 mesh [0, 1] : tensor<8xf32> -> tensor<4xf32>

// -----

// A tensor of device 0 broadcast to devices 0 and 1: rank 1 receives it.
fusion.fusion @bcast(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0]>]} {
  %e = fusion.exp %x : tensor<4x4xf32>
  %b = fusion.set %e {fusion.sharding = #fusion.sharding<mesh [0, 1]>} : tensor<4x4xf32>
  %y = fusion.neg %b : tensor<4x4xf32>
  fusion.output %y : tensor<4x4xf32>
}
// CHECK:      host.program @bcast
// CHECK-NEXT:   %e = host.run_fusion @bcast_r0_s0(%x)
// CHECK-NEXT:   %b, %b_work = host.broadcast %e root 0 mesh [0, 1] : tensor<4x4xf32> -> tensor<4x4xf32>
// RANK1:      host.program @bcast
// RANK1-NEXT:   %b, %b_work = host.broadcast root 0 mesh [0, 1] : tensor<4x4xf32>
// RANK1-NEXT:   host.wait %b_work
// RANK1-NEXT:   %y = host.run_fusion @bcast_r1_s1(%b)

// -----

// A pipeline: device 0 computes, sends to device 1, which computes on; rank 0 returns an empty
// tensor for the output it does not hold.
fusion.fusion @pipe(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0]>]} {
  %e = fusion.exp %x : tensor<4x4xf32>
  %m = fusion.set %e {fusion.sharding = #fusion.sharding<mesh [1]>} : tensor<4x4xf32>
  %y = fusion.neg %m : tensor<4x4xf32>
  fusion.output %y : tensor<4x4xf32>
}
// CHECK:      host.program @pipe(%x: tensor<4x4xf32>) -> tensor<0xf32>
// CHECK-NEXT:   %e = host.run_fusion @pipe_r0_s0(%x)
// CHECK-NEXT:   %m_work = host.send %e to 1 : tensor<4x4xf32>
// CHECK-NEXT:   %{{.*}} = host.allocate() : tensor<0xf32>
// CHECK-NEXT:   host.wait %m_work
// RANK1:      host.program @pipe(%x: tensor<4x4xf32>) -> tensor<4x4xf32>
// RANK1-NEXT:   %m, %m_work = host.recv from 0 : tensor<4x4xf32>
// RANK1-NEXT:   host.wait %m_work
// RANK1-NEXT:   %y = host.run_fusion @pipe_r1_s1(%m)
