// Two chained stream-parallel `set`s whose stream axes map: one loop over streams (nvFuser's
// TwoSetOps). With merge=none each set is a kernel of its own, so the serial program has two
// marked loops; lower-stream-parallel merges them (hoisting the allocation of %t2, moving the
// deallocation of %t1 after the join), and %t1's slice is written and read in one iteration, on
// one stream, with no synchronization between the two launches. With the schedulers' merge
// both sets are one kernel per slice.
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33 merge=none},fuser-lower-host{shapes=7x33}' | filecheck %s --check-prefix=SERIAL
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33 merge=none},fuser-lower-host{shapes=7x33},lower-stream-parallel' | filecheck %s
// RUN: fuser-opt %s -p 'fuser-segment{shapes=7x33},fuser-lower-host{shapes=7x33},lower-stream-parallel{streams=3}' | filecheck %s --check-prefix=MERGED

fusion.fusion @two_sets(%t0: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t1 = fusion.set %t0 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  %t2 = fusion.set %t1 {fusion.stream_axis = 0 : i64} : tensor<?x?xf32>
  fusion.output %t2 : tensor<?x?xf32>
}

// SERIAL:      %t1 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// SERIAL:      host.for %i = %c0 to %t0_d0 step %c1 {
// SERIAL:        host.launch @two_sets_s0_pointwise
// SERIAL-NEXT: } attributes {fuser.stream_parallel}
// SERIAL-NEXT: %t2 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// SERIAL-NEXT: host.for %i_1 = %c0 to %t0_d0 step %c1 {
// SERIAL:        host.launch @two_sets_s1_pointwise
// SERIAL-NEXT: } attributes {fuser.stream_parallel}
// SERIAL-NEXT: host.deallocate %t1 : tensor<?x?xf32>

// CHECK:      host.program @two_sets(%t0: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT:   %t0_d0 = host.dim %t0[0] : tensor<?x?xf32>
// CHECK-NEXT:   %t0_d1 = host.dim %t0[1] : tensor<?x?xf32>
// CHECK-NEXT:   %t1 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// CHECK:        %c0 = arith.constant 0 : index
// CHECK-NEXT:   %c1 = arith.constant 1 : index
// CHECK-NEXT:   %t2 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// CHECK-NEXT:   %caller = host.get_current_stream : !host.stream
// CHECK-NEXT:   %c4 = arith.constant 4 : index
// CHECK-NEXT:   host.for %i = %c0 to %t0_d0 step %c1 {
// CHECK-NEXT:     %slot = arith.remui %i, %c4 : index
// CHECK-NEXT:     %stream = host.stream %slot
// CHECK-NEXT:     host.set_current_stream %stream
// CHECK-NEXT:     host.synchronize %caller
// CHECK-NEXT:     %t0_i = host.alias_select %t0[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     %t1_i = host.alias_select %t1[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     {{.*}} = host.grid @two_sets_s0_pointwise ins(%t0_i : tensor<?xf32>)
// CHECK-NEXT:     host.launch @two_sets_s0_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t0_i : tensor<?xf32>) outs(%t1_i : tensor<?xf32>)
// CHECK-NEXT:     %t2_i = host.alias_select %t2[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK-NEXT:     {{.*}} = host.grid @two_sets_s1_pointwise ins(%t1_i : tensor<?xf32>)
// CHECK-NEXT:     host.launch @two_sets_s1_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t1_i : tensor<?xf32>) outs(%t2_i : tensor<?xf32>)
// CHECK-NEXT:     host.set_current_stream %caller
// CHECK-NEXT:   }
// CHECK-NEXT:   %used = arith.minui %t0_d0, %c4 : index
// CHECK-NEXT:   host.for %j = %c0 to %used step %c1 {
// CHECK-NEXT:     %joined = host.stream %j
// CHECK-NEXT:     host.synchronize %joined
// CHECK-NEXT:   }
// CHECK-NEXT:   host.deallocate %t1 : tensor<?x?xf32>
// CHECK-NEXT:   host.return %t2 : tensor<?x?xf32>
// CHECK-NEXT: }

// MERGED:      %t2 = host.allocate(%t0_d0, %t0_d1) : tensor<?x?xf32>
// MERGED:      %caller = host.get_current_stream : !host.stream
// MERGED-NEXT: %c3 = arith.constant 3 : index
// MERGED-NEXT: host.for %i = %c0 to %t0_d0 step %c1 {
// MERGED-NEXT:   %slot = arith.remui %i, %c3 : index
// MERGED-NEXT:   %stream = host.stream %slot
// MERGED-NEXT:   host.set_current_stream %stream
// MERGED-NEXT:   host.synchronize %caller
// MERGED-NEXT:   %t0_i = host.alias_select %t0[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// MERGED-NEXT:   %t2_i = host.alias_select %t2[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
// MERGED-NEXT:   {{.*}} = host.grid @two_sets_s0_pointwise ins(%t0_i : tensor<?xf32>)
// MERGED-NEXT:   host.launch @two_sets_s0_pointwise grid({{.*}}) block [{{.*}}] smem 0 ins(%t0_i : tensor<?xf32>) outs(%t2_i : tensor<?xf32>)
// MERGED-NEXT:   host.set_current_stream %caller
// MERGED-NEXT: }
// MERGED-NEXT: %used = arith.minui %t0_d0, %c3 : index
// MERGED-NOT:  host.launch
// MERGED:      host.return %t2 : tensor<?x?xf32>
