// Communication among ranks (multi-GPU): !host.work, host.allreduce, host.reduce_scatter,
// host.allgather, host.broadcast (root and receiving forms), host.send, host.recv, host.wait,
// and host.run_fusion of a fusion.fusion of the module.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// The first stage of a tensor-parallel layer: each rank's partial product and its row sums.
fusion.fusion @stage0(%x: tensor<?x8xf32>, %alpha: f32) -> (tensor<?x8xf32>, tensor<?xf32>) {
  %y = fusion.mul %x, %alpha : (tensor<?x8xf32>, f32) -> tensor<?x8xf32>
  %z = fusion.sum %y [1] : tensor<?x8xf32> -> tensor<?xf32>
  fusion.output %y, %z : tensor<?x8xf32>, tensor<?xf32>
}

// Rank 0's program of a mesh of two ranks.
host.program @rank0(%x: tensor<?x8xf32>, %alpha: f32, %b: tensor<8xf32>, %g: tensor<4x2xf32>, %t: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x4xf32>) {
  %y, %z = host.run_fusion @stage0(%x, %alpha) : (tensor<?x8xf32>, f32) -> (tensor<?x8xf32>, tensor<?xf32>)
  // Both partial results are summed over the mesh in one NCCL group, in place.
  %ry, %rb, %w0 = host.allreduce sum %y, %b mesh [0, 1] : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>, tensor<8xf32>
  host.wait %w0
  %c0 = arith.constant 0 : index
  %comm = host.stream %c0
  %rz, %w1 = host.reduce_scatter max %ry along 1 mesh [0, 1] on %comm : tensor<?x8xf32> -> tensor<?x4xf32>
  %rp, %w2 = host.allreduce prod %z mesh [1, 0] on %comm : tensor<?xf32> -> tensor<?xf32>
  %ag, %w3 = host.allgather %g along 1 mesh [0, 1] : tensor<4x2xf32> -> tensor<4x4xf32>
  %bt, %w4 = host.broadcast %t root 0 mesh [0, 1] on %comm : tensor<4x8xf32> -> tensor<4x8xf32>
  %w5 = host.send %u to 1 : tensor<4x8xf32>
  %rv, %w6 = host.recv from 1 on %comm : tensor<4x8xf32>
  host.wait %w1
  host.wait %w3
  %y2, %z2 = host.run_fusion @stage0(%ry, %alpha) on %comm : (tensor<?x8xf32>, f32) -> (tensor<?x8xf32>, tensor<?xf32>)
  %rs, %w7 = host.reduce_scatter min %t along 1 mesh [0, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  %rd, %w8 = host.reduce_scatter sum %u along 1 mesh [0, 1] {tag = 2 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
  host.return %ry, %rz, %ag : tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x4xf32>
}

// Rank 1's program: it receives the broadcast of rank 0.
host.program @rank1() -> tensor<4x8xf32> {
  %r, %w = host.broadcast root 0 mesh [0, 1] {tag = 1 : i64} : tensor<4x8xf32>
  host.wait %w
  host.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: host.program @rank0
// CHECK-NEXT:    %y, %z = host.run_fusion @stage0(%x, %alpha) : (tensor<?x8xf32>, f32) -> (tensor<?x8xf32>, tensor<?xf32>)
// CHECK-NEXT:    %ry, %rb, %w0 = host.allreduce sum %y, %b mesh [0, 1] : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>, tensor<8xf32>
// CHECK-NEXT:    host.wait %w0
// CHECK:         %rz, %w1 = host.reduce_scatter max %ry along 1 mesh [0, 1] on %comm : tensor<?x8xf32> -> tensor<?x4xf32>
// CHECK-NEXT:    %rp, %w2 = host.allreduce prod %z mesh [1, 0] on %comm : tensor<?xf32> -> tensor<?xf32>
// CHECK-NEXT:    %ag, %w3 = host.allgather %g along 1 mesh [0, 1] : tensor<4x2xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %bt, %w4 = host.broadcast %t root 0 mesh [0, 1] on %comm : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %w5 = host.send %u to 1 : tensor<4x8xf32>
// CHECK-NEXT:    %rv, %w6 = host.recv from 1 on %comm : tensor<4x8xf32>
// CHECK-NEXT:    host.wait %w1
// CHECK-NEXT:    host.wait %w3
// CHECK-NEXT:    %y2, %z2 = host.run_fusion @stage0(%ry, %alpha) on %comm : (tensor<?x8xf32>, f32) -> (tensor<?x8xf32>, tensor<?xf32>)
// CHECK-NEXT:    %rs, %w7 = host.reduce_scatter min %t along 1 mesh [0, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %rd, %w8 = host.reduce_scatter sum %u along 1 mesh [0, 1] {tag = 2 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    host.return %ry, %rz, %ag : tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x4xf32>
// CHECK-LABEL: host.program @rank1() -> tensor<4x8xf32> {
// CHECK-NEXT:    %r, %w = host.broadcast root 0 mesh [0, 1] {tag = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT:    host.wait %w
// CHECK-NEXT:    host.return %r : tensor<4x8xf32>

// CHECK-GENERIC:      %y, %z = "host.run_fusion"(%x, %alpha) <{callee = @stage0, operandSegmentSizes = array<i32: 2, 0>}> : (tensor<?x8xf32>, f32) -> (tensor<?x8xf32>, tensor<?xf32>)
// CHECK-GENERIC-NEXT: %ry, %rb, %w0 = "host.allreduce"(%y, %b) <{reduction = "sum", mesh = array<i64: 0, 1>, operandSegmentSizes = array<i32: 2, 0>}> : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<8xf32>, !host.work)
// CHECK-GENERIC-NEXT: "host.wait"(%w0) : (!host.work) -> ()
// CHECK-GENERIC:      %rz, %w1 = "host.reduce_scatter"(%ry, %comm) <{reduction = "max", along = 1 : i64, mesh = array<i64: 0, 1>}> : (tensor<?x8xf32>, !host.stream) -> (tensor<?x4xf32>, !host.work)
// CHECK-GENERIC:      %ag, %w3 = "host.allgather"(%g) <{along = 1 : i64, mesh = array<i64: 0, 1>}> : (tensor<4x2xf32>) -> (tensor<4x4xf32>, !host.work)
// CHECK-GENERIC-NEXT: %bt, %w4 = "host.broadcast"(%t, %comm) <{root_rank = 0 : i64, mesh = array<i64: 0, 1>, operandSegmentSizes = array<i32: 1, 1>}> : (tensor<4x8xf32>, !host.stream) -> (tensor<4x8xf32>, !host.work)
// CHECK-GENERIC-NEXT: %w5 = "host.send"(%u) <{peer_rank = 1 : i64}> : (tensor<4x8xf32>) -> !host.work
// CHECK-GENERIC-NEXT: %rv, %w6 = "host.recv"(%comm) <{peer_rank = 1 : i64}> : (!host.stream) -> (tensor<4x8xf32>, !host.work)
// CHECK-GENERIC:      %r, %w = "host.broadcast"() <{root_rank = 0 : i64, mesh = array<i64: 0, 1>, operandSegmentSizes = array<i32: 0, 0>}> {tag = 1 : i64} : () -> (tensor<4x8xf32>, !host.work)
