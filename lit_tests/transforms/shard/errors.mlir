// What fuser-shard cannot split, each a one-line error naming the op, and exit code 1 (each
// case runs alone: awk prints the n-th part between the `-----` lines).
// RUN: awk 'BEGIN{RS="// [-]----"} NR==1' %s | not fuser-opt -p 'fuser-shard{rank=0}' 2>&1 | filecheck %s --check-prefix=SCAN
// RUN: awk 'BEGIN{RS="// [-]----"} NR==2' %s | not fuser-opt -p 'fuser-shard{rank=0}' 2>&1 | filecheck %s --check-prefix=A2A
// RUN: awk 'BEGIN{RS="// [-]----"} NR==3' %s | not fuser-opt -p 'fuser-shard{rank=0}' 2>&1 | filecheck %s --check-prefix=MESHES
// RUN: awk 'BEGIN{RS="// [-]----"} NR==4' %s | not fuser-opt -p 'fuser-shard{rank=0}' 2>&1 | filecheck %s --check-prefix=DYNAMIC
// RUN: not fuser-opt %s -p 'fuser-shard{rank=-1}' 2>&1 | filecheck %s --check-prefix=RANK

// SCAN: fuser-opt: error: 'fusion.cumsum' (%c): has a split operand (operand #0 along axis 1): fuser-shard splits pointwise ops, broadcast_in_dim, permute, squeeze, sum/prod/max/min and matmul; gather the operand first
// SCAN-NOT: Traceback
fusion.fusion @scan(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>]} {
  %c = fusion.cumsum %x along 1 : tensor<4x8xf32>
  fusion.output %c : tensor<4x8xf32>
}

// -----

// A2A: fuser-opt: error: 'fusion.set' (%y): computed as #fusion.sharding<mesh [0, 1], axis 0>, placed as #fusion.sharding<mesh [0, 1], axis 1>: moving the split from axis 0 to axis 1 (an all-to-all) is not supported
fusion.fusion @all_to_all(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 0>]} {
  %y = fusion.set %x {fusion.sharding = #fusion.sharding<mesh [0, 1], axis 1>} : tensor<4x8xf32>
  fusion.output %y : tensor<4x8xf32>
}

// -----

// MESHES: fuser-opt: error: 'fusion.add' (%z): its operands live on meshes [0] and [1]: move them onto one
fusion.fusion @meshes(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0]>, #fusion.sharding<mesh [1]>]} {
  %z = fusion.add %x, %y : tensor<4xf32>
  fusion.output %z : tensor<4xf32>
}

// -----

// DYNAMIC: fuser-opt: error: 'fusion.mul' (%z): operand #1 (%y) is replicated with a dynamic extent along axis 1, which the other operands split
fusion.fusion @dynamic(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fusion.input_shardings = [#fusion.sharding<mesh [0, 1], axis 1>, #fusion.sharding<mesh [0, 1]>]} {
  %z = fusion.mul %x, %y : tensor<?x?xf32>
  fusion.output %z : tensor<?x?xf32>
}

// RANK: fuser-opt: error: fuser-shard: rank must be non-negative, got -1
