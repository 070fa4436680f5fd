// Three chained `set`s, the middle one not stream-parallel (nvFuser's
// ThreeSetOpsWithDisjointsForLoops): the plain set is a whole-tensor kernel between two loops over
// streams, each with its own caller stream and join, so the plain kernel sees all of %t1 and
// the second loop starts after the plain kernel. The segmenter never merges a stream-parallel
// op with a plain one, so the schedulers' merge gives the same three segments.
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33},fuser-lower-host{shapes=7x33},lower-stream-parallel' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33 merge=none},fuser-lower-host{shapes=7x33},lower-stream-parallel' | filecheck %s

fusion.fusion @three_sets(%t0: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t1 = fusion.set %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %t2 = fusion.set %t1 : tensor<?x?xf32>
  %t3 = fusion.set %t2 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %t3 : tensor<?x?xf32>
}

// CHECK:      host.program @three_sets(%t0: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT:   %t0_d0 = host.dim %t0[0] : tensor<?x?xf32>
// CHECK-NEXT:   %t0_d1 = host.dim %t0[1] : tensor<?x?xf32>
// CHECK-NEXT:   %t1 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// CHECK:        %c0 = arith.constant 0 : index
// CHECK-NEXT:   %c1 = arith.constant 1 : index
// CHECK-NEXT:   %caller = host.get_current_stream : !host.stream
// CHECK-NEXT:   %c4 = arith.constant 4 : index
// CHECK-NEXT:   host.for %i = %c0 to %t0_d0 step %c1 {
// CHECK-NEXT:     %slot = arith.remui %i, %c4 : index
// CHECK-NEXT:     %stream = host.stream %slot
// CHECK-NEXT:     host.set_current_stream %stream
// CHECK-NEXT:     host.synchronize %caller
// CHECK-NEXT:     %t0_i = host.alias_select %t0[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     %t1_i = host.alias_select %t1[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     {{.*}} = host.grid @three_sets_s0_pointwise ins(%t0_i : tensor<?xf32>)
// CHECK-NEXT:     host.launch @three_sets_s0_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t0_i : tensor<?xf32>) outs(%t1_i : tensor<?xf32>)
// CHECK-NEXT:     host.set_current_stream %caller
// CHECK-NEXT:   }
// CHECK-NEXT:   %used = arith.minui %t0_d0, %c4 : index
// CHECK-NEXT:   host.for %j = %c0 to %used step %c1 {
// CHECK-NEXT:     %joined = host.stream %j
// CHECK-NEXT:     host.synchronize %joined
// CHECK-NEXT:   }
// CHECK-NEXT:   %t2 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// CHECK:        {{.*}} = host.grid @three_sets_s1_pointwise ins(%t1 : tensor<?x?xf32>)
// CHECK-NEXT:        host.launch @three_sets_s1_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t1 : tensor<?x?xf32>) outs(%t2 : tensor<?x?xf32>)
// CHECK-NEXT:   host.deallocate %t1 : tensor<?x?xf32>
// CHECK-NEXT:   %t3 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// CHECK-NEXT:   %caller_1 = host.get_current_stream : !host.stream
// CHECK-NEXT:   %c4_1 = arith.constant 4 : index
// CHECK-NEXT:   host.for %i_1 = %c0 to %t0_d0 step %c1 {
// CHECK-NEXT:     %slot_1 = arith.remui %i_1, %c4_1 : index
// CHECK-NEXT:     %stream_1 = host.stream %slot_1
// CHECK-NEXT:     host.set_current_stream %stream_1
// CHECK-NEXT:     host.synchronize %caller_1
// CHECK-NEXT:     %t2_i = host.alias_select %t2[%i_1] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     %t3_i = host.alias_select %t3[%i_1] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     {{.*}} = host.grid @three_sets_s2_pointwise ins(%t2_i : tensor<?xf32>)
// CHECK-NEXT:     host.launch @three_sets_s2_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t2_i : tensor<?xf32>) outs(%t3_i : tensor<?xf32>)
// CHECK-NEXT:     host.set_current_stream %caller_1
// CHECK-NEXT:   }
// CHECK-NEXT:   %used_1 = arith.minui %t0_d0, %c4_1 : index
// CHECK-NEXT:   host.for %j_1 = %c0 to %used_1 step %c1 {
// CHECK-NEXT:     %joined_1 = host.stream %j_1
// CHECK-NEXT:     host.synchronize %joined_1
// CHECK-NEXT:   }
// CHECK-NEXT:   host.deallocate %t2 : tensor<?x?xf32>
// CHECK-NEXT:   host.return %t3 : tensor<?x?xf32>
// CHECK-NEXT: }
