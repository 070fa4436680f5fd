// The merge rule of lower-stream-parallel on hand-written host programs: marked loops that follow
// each other share one loop over streams when they have the same bounds and each reads what the
// earlier ones write only as the slice at the same index along the same axis. Allocations,
// extents and index arithmetic between them move before the loop, deallocations after the join.
// RUN: fuser-opt %s --split-input-file -p 'lower-stream-parallel{streams=8}' | filecheck %s

kernel.func @row(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
kernel.func @whole(%x: !kernel.tensor<f32, 2>, %y: !kernel.tensor<f32, 2>) {
  kernel.return
}

// Merged: static bounds (the join's trip count folds to min(6, 8)), %b allocated and %a freed
// between the loops.
host.program @merged(%x: tensor<6x5xf32>) -> tensor<6x5xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %a = host.allocate() : tensor<6x5xf32>
  host.for %i = %c0 to %c6 step %c1 {
    %xi = host.alias_select %x[%i] axis 0 : tensor<6x5xf32> -> tensor<5xf32>
    %ai = host.alias_select %a[%i] axis 0 : tensor<6x5xf32> -> tensor<5xf32>
    host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%xi : tensor<5xf32>) outs(%ai : tensor<5xf32>)
  } attributes {fuser.stream_parallel}
  %b = host.allocate() : tensor<6x5xf32>
  %c6_again = arith.constant 6 : index
  host.for %k = %c0 to %c6_again step %c1 {
    %ak = host.alias_select %a[%k] axis 0 : tensor<6x5xf32> -> tensor<5xf32>
    %bk = host.alias_select %b[%k] axis 0 : tensor<6x5xf32> -> tensor<5xf32>
    host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%ak : tensor<5xf32>) outs(%bk : tensor<5xf32>)
  } attributes {fuser.stream_parallel}
  host.deallocate %a : tensor<6x5xf32>
  host.return %b : tensor<6x5xf32>
}

// CHECK-LABEL: host.program @merged
// CHECK:        %a = host.allocate() : tensor<6x5xf32>
// CHECK-NEXT:   %b = host.allocate() : tensor<6x5xf32>
// CHECK-NEXT:   %c6_again = arith.constant 6 : index
// CHECK-NEXT:   %caller = host.get_current_stream : !host.stream
// CHECK-NEXT:   %c8 = arith.constant 8 : index
// CHECK-NEXT:   host.for %i = %c0 to %c6 step %c1 {
// CHECK-NEXT:     %slot = arith.remui %i, %c8 : index
// CHECK-NEXT:     %stream = host.stream %slot
// CHECK-NEXT:     host.set_current_stream %stream
// CHECK-NEXT:     host.synchronize %caller
// CHECK-NEXT:     %xi = host.alias_select %x[%i] axis 0 : tensor<6x5xf32> -> tensor<5xf32>
// CHECK-NEXT:     %ai = host.alias_select %a[%i] axis 0 : tensor<6x5xf32> -> tensor<5xf32>
// CHECK-NEXT:     host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%xi : tensor<5xf32>) outs(%ai : tensor<5xf32>)
// CHECK-NEXT:     %bk = host.alias_select %b[%i] axis 0 : tensor<6x5xf32> -> tensor<5xf32>
// CHECK-NEXT:     host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%ai : tensor<5xf32>) outs(%bk : tensor<5xf32>)
// CHECK-NEXT:     host.set_current_stream %caller
// CHECK-NEXT:   }
// CHECK-NEXT:   %c6_1 = arith.constant 6 : index
// CHECK-NEXT:   host.for %j = %c0 to %c6_1 step %c1 {
// CHECK-NEXT:     %joined = host.stream %j
// CHECK-NEXT:     host.synchronize %joined
// CHECK-NEXT:   }
// CHECK-NEXT:   host.deallocate %a : tensor<6x5xf32>
// CHECK-NEXT:   host.return %b : tensor<6x5xf32>

// -----

kernel.func @row(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}

// Not merged: the second loop reads %a along axis 1, not as the slices the first writes (each
// of its iterations needs every iteration of the first).
host.program @transposed(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = host.dim %x[0] : tensor<?x?xf32>
  %a = host.allocate(%n, %n) : tensor<?x?xf32>
  %b = host.allocate(%n, %n) : tensor<?x?xf32>
  host.for %i = %c0 to %n step %c1 {
    %xi = host.alias_select %x[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    %ai = host.alias_select %a[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%xi : tensor<?xf32>) outs(%ai : tensor<?xf32>)
  } attributes {fuser.stream_parallel}
  host.for %k = %c0 to %n step %c1 {
    %ak = host.alias_select %a[%k] axis 1 : tensor<?x?xf32> -> tensor<?xf32>
    %bk = host.alias_select %b[%k] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%ak : tensor<?xf32>) outs(%bk : tensor<?xf32>)
  } attributes {fuser.stream_parallel}
  host.deallocate %a : tensor<?x?xf32>
  host.return %b : tensor<?x?xf32>
}

// CHECK-LABEL: host.program @transposed
// CHECK:        host.for %i = %c0 to %n step %c1 {
// CHECK:          host.launch @row
// CHECK:        host.for %j = %c0 to %used step %c1 {
// CHECK:        %caller_1 = host.get_current_stream : !host.stream
// CHECK:        host.for %k = %c0 to %n step %c1 {
// CHECK:          %ak = host.alias_select %a[%k] axis 1 : tensor<?x?xf32> -> tensor<?xf32>
// CHECK:        host.for %j_1 = %c0 to %used_1 step %c1 {
// CHECK:        host.deallocate %a : tensor<?x?xf32>

// -----

kernel.func @row(%x: !kernel.tensor<f32, 1>, %y: !kernel.tensor<f32, 1>) {
  kernel.return
}
kernel.func @whole(%x: !kernel.tensor<f32, 2>, %y: !kernel.tensor<f32, 2>) {
  kernel.return
}

// Not merged: the second loop reads %a whole; and the third has other bounds.
host.program @whole_read(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = host.dim %x[0] : tensor<?x?xf32>
  %m = host.dim %x[1] : tensor<?x?xf32>
  %a = host.allocate(%n, %m) : tensor<?x?xf32>
  %b = host.allocate(%n, %m) : tensor<?x?xf32>
  %t = host.allocate(%m, %n) : tensor<?x?xf32>
  host.for %i = %c0 to %n step %c1 {
    %xi = host.alias_select %x[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    %ai = host.alias_select %a[%i] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%xi : tensor<?xf32>) outs(%ai : tensor<?xf32>)
  } attributes {fuser.stream_parallel}
  host.for %k = %c0 to %n step %c1 {
    %bk = host.alias_select %b[%k] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    host.launch @whole grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%a : tensor<?x?xf32>) outs(%b : tensor<?x?xf32>)
  } attributes {fuser.stream_parallel}
  host.for %l = %c0 to %m step %c1 {
    %bl = host.alias_select %b[%l] axis 1 : tensor<?x?xf32> -> tensor<?xf32>
    %tl = host.alias_select %t[%l] axis 0 : tensor<?x?xf32> -> tensor<?xf32>
    host.launch @row grid(%c1, %c1, %c1) block [32, 1, 1] smem 0 ins(%bl : tensor<?xf32>) outs(%tl : tensor<?xf32>)
  } attributes {fuser.stream_parallel}
  host.deallocate %a : tensor<?x?xf32>
  host.return %b, %t : tensor<?x?xf32>, tensor<?x?xf32>
}

// CHECK-LABEL: host.program @whole_read
// CHECK-COUNT-3: host.get_current_stream
// CHECK-NOT:     host.get_current_stream
// CHECK:         host.deallocate %a : tensor<?x?xf32>
// CHECK-NOT:     fuser.stream_parallel
