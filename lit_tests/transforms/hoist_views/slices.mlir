// fuser-hoist-views moves a slice above the pointwise ops it follows and through permutes (the
// bounds renumbered), to the fusion's inputs, cloning what others read too. A slice of a chain
// that meets a reduction stays: there the kernel boundary is the reduction's anyway.
// RUN: fuser-opt %s -p fuser-hoist-views | filecheck %s

// The halves of a rotary embedding: q = permute(x), out = (q * c)[..., :32] and q[..., 32:].
fusion.fusion @halves(%x: tensor<2x8x16x64xf32>, %c: tensor<2x16x8x64xf32>) -> (tensor<2x16x8x32xf32>, tensor<2x16x8x32xf32>) {
  %q = fusion.permute %x [0, 2, 1, 3] : tensor<2x8x16x64xf32> -> tensor<2x16x8x64xf32>
  %m = fusion.mul %q, %c : tensor<2x16x8x64xf32>
  %lo = fusion.slice %m [:, :, :, :32] : tensor<2x16x8x64xf32> -> tensor<2x16x8x32xf32>
  %hi = fusion.slice %q [:, :, :, 32:] : tensor<2x16x8x64xf32> -> tensor<2x16x8x32xf32>
  fusion.output %lo, %hi : tensor<2x16x8x32xf32>, tensor<2x16x8x32xf32>
}

// CHECK-LABEL: fusion.fusion @halves
// CHECK-NEXT:    %[[XL:.*]] = fusion.slice %x [:, :, :, :32] : tensor<2x8x16x64xf32> -> tensor<2x8x16x32xf32>
// CHECK-NEXT:    %[[QL:.*]] = fusion.permute %[[XL]] [0, 2, 1, 3] : tensor<2x8x16x32xf32> -> tensor<2x16x8x32xf32>
// CHECK-NEXT:    %[[CL:.*]] = fusion.slice %c [:, :, :, :32] : tensor<2x16x8x64xf32> -> tensor<2x16x8x32xf32>
// CHECK-NEXT:    %lo = fusion.mul %[[QL]], %[[CL]] : tensor<2x16x8x32xf32>
// CHECK-NEXT:    %[[XH:.*]] = fusion.slice %x [:, :, :, 32:] : tensor<2x8x16x64xf32> -> tensor<2x8x16x32xf32>
// CHECK-NEXT:    %hi = fusion.permute %[[XH]] [0, 2, 1, 3] : tensor<2x8x16x32xf32> -> tensor<2x16x8x32xf32>
// CHECK-NEXT:    fusion.output %lo, %hi

// A squeezed dim is kept whole in the operand's slice; a dynamic dim keeps its ?.
fusion.fusion @squeezed(%x: tensor<?x1x10xf32>) -> (tensor<?x3xf32>) {
  %s = fusion.squeeze %x [1] : tensor<?x1x10xf32> -> tensor<?x10xf32>
  %e = fusion.exp %s : tensor<?x10xf32>
  %r = fusion.slice %e [1:, -6:-3] : tensor<?x10xf32> -> tensor<?x3xf32>
  fusion.output %r : tensor<?x3xf32>
}

// CHECK-LABEL: fusion.fusion @squeezed
// CHECK-NEXT:    %[[V:.*]] = fusion.slice %x [1:, :, -6:-3] : tensor<?x1x10xf32> -> tensor<?x1x3xf32>
// CHECK-NEXT:    %[[S:.*]] = fusion.squeeze %[[V]] [1] : tensor<?x1x3xf32> -> tensor<?x3xf32>
// CHECK-NEXT:    %r = fusion.exp %[[S]] : tensor<?x3xf32>

// A chain through a reduction stays put, shared or not.
fusion.fusion @stays(%x: tensor<8x6xf32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<2xf32>) {
  %s = fusion.sum %x [1] : tensor<8x6xf32> -> tensor<8xf32>
  %e = fusion.exp %s : tensor<8xf32>
  %r = fusion.slice %e [::2] : tensor<8xf32> -> tensor<4xf32>
  %n = fusion.neg %s : tensor<8xf32>
  %t = fusion.slice %n [6:] : tensor<8xf32> -> tensor<2xf32>
  fusion.output %r, %n, %t : tensor<4xf32>, tensor<8xf32>, tensor<2xf32>
}

// CHECK-LABEL: fusion.fusion @stays
// CHECK:         %e = fusion.exp %s : tensor<8xf32>
// CHECK-NEXT:    %r = fusion.slice %e [::2] : tensor<8xf32> -> tensor<4xf32>
// CHECK:         %t = fusion.slice %n [6:] : tensor<8xf32> -> tensor<2xf32>

// A cast that others read whole is cloned for the slice, which then reads a view of the input.
fusion.fusion @shared(%x: tensor<4x64xbf16>) -> (tensor<4x64xf32>, tensor<4x32xf32>) {
  %f = fusion.cast %x : tensor<4x64xbf16> -> tensor<4x64xf32>
  %e = fusion.exp %f : tensor<4x64xf32>
  %h = fusion.slice %f [:, 32:] : tensor<4x64xf32> -> tensor<4x32xf32>
  fusion.output %e, %h : tensor<4x64xf32>, tensor<4x32xf32>
}

// CHECK-LABEL: fusion.fusion @shared
// CHECK-NEXT:    %f = fusion.cast %x : tensor<4x64xbf16> -> tensor<4x64xf32>
// CHECK-NEXT:    %e = fusion.exp %f : tensor<4x64xf32>
// CHECK-NEXT:    %[[V:.*]] = fusion.slice %x [:, 32:] : tensor<4x64xbf16> -> tensor<4x32xbf16>
// CHECK-NEXT:    %h = fusion.cast %[[V]] : tensor<4x32xbf16> -> tensor<4x32xf32>
