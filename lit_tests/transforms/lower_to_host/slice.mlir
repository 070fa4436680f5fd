// A slice stays between segments, as a reshape does: the program takes it as a view
// (`host.slice`: the operand's strides times the steps, the pointer moved to the first element)
// of an input or of a segment's result; a dynamic extent it leaves is arith on the operand's
// (the bounds clamped as torch clamps them). A slice of an input that an output is is returned as
// a view of the input (as nvFuser aliases it, and torch slices).
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8x4096,8x64"}' | filecheck %s --check-prefix=SEG
// RUN: fuser-opt %s -p 'fuser-segment{shapes="8x4096,8x64"},fuser-lower-host' | filecheck %s

fusion.fusion @f(%x: tensor<?x4096xf32>, %y: tensor<?x64xf32>) -> (tensor<?xf32>, tensor<?x32xf32>) {
  %s = fusion.sum %x [1] : tensor<?x4096xf32> -> tensor<?xf32>
  %t = fusion.slice %s [1::2] : tensor<?xf32> -> tensor<?xf32>
  %e = fusion.exp %t : tensor<?xf32>
  %h = fusion.slice %y [-4:, 32:] : tensor<?x64xf32> -> tensor<?x32xf32>
  fusion.output %e, %h : tensor<?xf32>, tensor<?x32xf32>
}

// SEG:      %s = fusion.segment "reduction" (%x)
// SEG:      %t = fusion.slice %s [1::2] : tensor<?xf32> -> tensor<?xf32>
// SEG-NEXT: %e = fusion.segment "pointwise" (%t)
// SEG:      %h = fusion.slice %y [-4:, 32:] : tensor<?x64xf32> -> tensor<?x32xf32>
// SEG-NEXT: fusion.output %e, %h : tensor<?xf32>, tensor<?x32xf32>

// CHECK:      host.launch @f_s0_reduction {{.*}} outs(%s : tensor<?xf32>)
// CHECK-NEXT: %t = host.slice %s [1::2] : tensor<?xf32> -> tensor<?xf32>
// CHECK:      %[[FIRST:.*]] = arith.minsi %c1, %x_d0 : index
// CHECK-NEXT: %[[SPAN:.*]] = arith.subi %x_d0, %[[FIRST]] : index
// CHECK-NEXT: %[[KEPT:.*]] = arith.maxsi %[[SPAN]], %c0 : index
// CHECK:      %t_d0 = arith.ceildivsi %[[KEPT]], %c2 : index
// CHECK-NEXT: %e = host.allocate(%t_d0) : tensor<?xf32>
// CHECK:      host.launch @f_s1_pointwise {{.*}} ins(%t : tensor<?xf32>) outs(%e : tensor<?xf32>)
// CHECK-NEXT: host.deallocate %s : tensor<?xf32>
// CHECK-NEXT: %h = host.slice %y [-4:, 32:] : tensor<?x64xf32> -> tensor<?x32xf32>
// CHECK-NEXT: host.return %e, %h : tensor<?xf32>, tensor<?x32xf32>
