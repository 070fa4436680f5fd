// Data movement: cast, set, segment_set, broadcast_in_dim (with and without `sizes`), a scalar
// broadcast to a tensor (fill), the ops that renumber dims (permute, squeeze), slice, iota, pad
// and cat.
// These take the storage types f16/bf16.
// RUN: FUSER_ROUNDTRIP
// RUN: FUSER_GENERIC_ROUNDTRIP
// RUN: fuser-opt %s --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// Casts between storage, compute, integer and boolean types, on tensors and scalars.
fusion.fusion @casts(%h: tensor<?x3xbf16>, %m: tensor<?x3xi1>, %s: f32) -> (tensor<?x3xf16>, tensor<?x3xi32>) {
  %f = fusion.cast %h : tensor<?x3xbf16> -> tensor<?x3xf32>
  %half = fusion.cast %f : tensor<?x3xf32> -> tensor<?x3xf16>
  %mf = fusion.cast %m : tensor<?x3xi1> -> tensor<?x3xi32>
  %d = fusion.cast %s : f32 -> f64
  fusion.output %half, %mf : tensor<?x3xf16>, tensor<?x3xi32>
}

// CHECK-LABEL: fusion.fusion @casts(%h: tensor<?x3xbf16>, %m: tensor<?x3xi1>, %s: f32) -> (tensor<?x3xf16>, tensor<?x3xi32>) {
// CHECK-NEXT:    %f = fusion.cast %h : tensor<?x3xbf16> -> tensor<?x3xf32>
// CHECK-NEXT:    %half = fusion.cast %f : tensor<?x3xf32> -> tensor<?x3xf16>
// CHECK-NEXT:    %mf = fusion.cast %m : tensor<?x3xi1> -> tensor<?x3xi32>
// CHECK-NEXT:    %d = fusion.cast %s : f32 -> f64

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "casts"
// CHECK-GENERIC:         %f = "fusion.cast"(%h) : (tensor<?x3xbf16>) -> tensor<?x3xf32>
// CHECK-GENERIC-NEXT:    %half = "fusion.cast"(%f) : (tensor<?x3xf32>) -> tensor<?x3xf16>
// CHECK-GENERIC-NEXT:    %mf = "fusion.cast"(%m) : (tensor<?x3xi1>) -> tensor<?x3xi32>
// CHECK-GENERIC-NEXT:    %d = "fusion.cast"(%s) : (f32) -> f64

// set and segment_set keep their operand's type.
fusion.fusion @copies(%x: tensor<?x127xf16>, %i: tensor<1xi64>) -> (tensor<?x127xf16>, tensor<1xi64>) {
  %a = fusion.set %x : tensor<?x127xf16>
  %b = fusion.segment_set %a : tensor<?x127xf16>
  %c = fusion.segment_set %i : tensor<1xi64>
  fusion.output %b, %c : tensor<?x127xf16>, tensor<1xi64>
}

// CHECK-LABEL: fusion.fusion @copies
// CHECK-NEXT:    %a = fusion.set %x : tensor<?x127xf16>
// CHECK-NEXT:    %b = fusion.segment_set %a : tensor<?x127xf16>
// CHECK-NEXT:    %c = fusion.segment_set %i : tensor<1xi64>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "copies"
// CHECK-GENERIC:         %a = "fusion.set"(%x) : (tensor<?x127xf16>) -> tensor<?x127xf16>
// CHECK-GENERIC-NEXT:    %b = "fusion.segment_set"(%a) : (tensor<?x127xf16>) -> tensor<?x127xf16>
// CHECK-GENERIC-NEXT:    %c = "fusion.segment_set"(%i) : (tensor<1xi64>) -> tensor<1xi64>

// broadcast_in_dim: static new dims need no sizes; dynamic operand dims carry their extent;
// a new dynamic dim, or a static 1 expanded to a dynamic dim, takes its extent from `sizes`.
fusion.fusion @broadcasts(%x: tensor<?xf32>, %one: tensor<1x3xbf16>, %n: tensor<?x?xf32>) -> (tensor<5x?xf32>, tensor<?x?xf32>, tensor<4x3xbf16>, tensor<?x3x?xbf16>) {
  %r = fusion.dim %n[0] : tensor<?x?xf32>
  %c = fusion.dim %n[1] : tensor<?x?xf32>
  %static_new = fusion.broadcast_in_dim %x [1] : tensor<?xf32> -> tensor<5x?xf32>
  %dynamic_new = fusion.broadcast_in_dim %x [1] sizes(%r) : tensor<?xf32> -> tensor<?x?xf32>
  %expand = fusion.broadcast_in_dim %one [0, 1] : tensor<1x3xbf16> -> tensor<4x3xbf16>
  %expand_dyn = fusion.broadcast_in_dim %one [0, 1] sizes(%r, %c) : tensor<1x3xbf16> -> tensor<?x3x?xbf16>
  fusion.output %static_new, %dynamic_new, %expand, %expand_dyn : tensor<5x?xf32>, tensor<?x?xf32>, tensor<4x3xbf16>, tensor<?x3x?xbf16>
}

// CHECK-LABEL: fusion.fusion @broadcasts
// CHECK-NEXT:    %r = fusion.dim %n[0] : tensor<?x?xf32>
// CHECK-NEXT:    %c = fusion.dim %n[1] : tensor<?x?xf32>
// CHECK-NEXT:    %static_new = fusion.broadcast_in_dim %x [1] : tensor<?xf32> -> tensor<5x?xf32>
// CHECK-NEXT:    %dynamic_new = fusion.broadcast_in_dim %x [1] sizes(%r) : tensor<?xf32> -> tensor<?x?xf32>
// CHECK-NEXT:    %expand = fusion.broadcast_in_dim %one [0, 1] : tensor<1x3xbf16> -> tensor<4x3xbf16>
// CHECK-NEXT:    %expand_dyn = fusion.broadcast_in_dim %one [0, 1] sizes(%r, %c) : tensor<1x3xbf16> -> tensor<?x3x?xbf16>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "broadcasts"
// CHECK-GENERIC:         %static_new = "fusion.broadcast_in_dim"(%x) <{broadcast_dims = array<i64: 1>}> : (tensor<?xf32>) -> tensor<5x?xf32>
// CHECK-GENERIC-NEXT:    %dynamic_new = "fusion.broadcast_in_dim"(%x, %r) <{broadcast_dims = array<i64: 1>}> : (tensor<?xf32>, index) -> tensor<?x?xf32>
// CHECK-GENERIC-NEXT:    %expand = "fusion.broadcast_in_dim"(%one) <{broadcast_dims = array<i64: 0, 1>}> : (tensor<1x3xbf16>) -> tensor<4x3xbf16>
// CHECK-GENERIC-NEXT:    %expand_dyn = "fusion.broadcast_in_dim"(%one, %r, %c) <{broadcast_dims = array<i64: 0, 1>}> : (tensor<1x3xbf16>, index, index) -> tensor<?x3x?xbf16>

// A scalar fills a tensor: `[]` maps no dims, every dynamic result dim is sized.
fusion.fusion @fill(%x: tensor<?x?xf64>, %s: f64, %b: i1) -> (tensor<?x?xf64>, tensor<3x127xi1>) {
  %r = fusion.dim %x[0] : tensor<?x?xf64>
  %c = fusion.dim %x[1] : tensor<?x?xf64>
  %full = fusion.broadcast_in_dim %s [] sizes(%r, %c) : f64 -> tensor<?x?xf64>
  %mask = fusion.broadcast_in_dim %b [] : i1 -> tensor<3x127xi1>
  fusion.output %full, %mask : tensor<?x?xf64>, tensor<3x127xi1>
}

// CHECK-LABEL: fusion.fusion @fill
// CHECK:         %full = fusion.broadcast_in_dim %s [] sizes(%r, %c) : f64 -> tensor<?x?xf64>
// CHECK-NEXT:    %mask = fusion.broadcast_in_dim %b [] : i1 -> tensor<3x127xi1>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "fill"
// CHECK-GENERIC:         %full = "fusion.broadcast_in_dim"(%s, %r, %c) <{broadcast_dims = array<i64>}> : (f64, index, index) -> tensor<?x?xf64>
// CHECK-GENERIC-NEXT:    %mask = "fusion.broadcast_in_dim"(%b) <{broadcast_dims = array<i64>}> : (i1) -> tensor<3x127xi1>

// permute reorders dims (result dim i is operand dim dims[i]); squeeze drops dims of static
// extent 1.
fusion.fusion @renumber(%x: tensor<?x1x3x?xbf16>) -> (tensor<?x3x?xbf16>, tensor<3x?x?xbf16>) {
  %s = fusion.squeeze %x [1] : tensor<?x1x3x?xbf16> -> tensor<?x3x?xbf16>
  %p = fusion.permute %s [1, 2, 0] : tensor<?x3x?xbf16> -> tensor<3x?x?xbf16>
  fusion.output %s, %p : tensor<?x3x?xbf16>, tensor<3x?x?xbf16>
}

// CHECK-LABEL: fusion.fusion @renumber
// CHECK-NEXT:    %s = fusion.squeeze %x [1] : tensor<?x1x3x?xbf16> -> tensor<?x3x?xbf16>
// CHECK-NEXT:    %p = fusion.permute %s [1, 2, 0] : tensor<?x3x?xbf16> -> tensor<3x?x?xbf16>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "renumber"
// CHECK-GENERIC:         %s = "fusion.squeeze"(%x) <{squeezed = array<i64: 1>}> : (tensor<?x1x3x?xbf16>) -> tensor<?x3x?xbf16>
// CHECK-GENERIC-NEXT:    %p = "fusion.permute"(%s) <{permutation = array<i64: 1, 2, 0>}> : (tensor<?x3x?xbf16>) -> tensor<3x?x?xbf16>

// iota: a static length, or a run-time one as an index operand; integer and float types.
fusion.fusion @iotas(%x: tensor<?x4xf32>) -> (tensor<6xi64>, tensor<?xbf16>, tensor<0xi32>) {
  %n = fusion.dim %x[0] : tensor<?x4xf32>
  %a = fusion.iota start -2 step 3 : tensor<6xi64>
  %b = fusion.iota(%n) start 5.000000e-01 step -2.500000e-01 : tensor<?xbf16>
  %c = fusion.iota start 0 step 1 : tensor<0xi32>
  fusion.output %a, %b, %c : tensor<6xi64>, tensor<?xbf16>, tensor<0xi32>
}

// CHECK-LABEL: fusion.fusion @iotas
// CHECK:       %a = fusion.iota start -2 step 3 : tensor<6xi64>
// CHECK-NEXT:  %b = fusion.iota(%n) start 5.000000e-01 step -2.500000e-01 : tensor<?xbf16>
// CHECK-NEXT:  %c = fusion.iota start 0 step 1 : tensor<0xi32>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "iotas"
// CHECK-GENERIC:         %a = "fusion.iota"() <{start = -2 : i64, step = 3 : i64}> : () -> tensor<6xi64>
// CHECK-GENERIC-NEXT:    %b = "fusion.iota"(%n) <{start = 5.000000e-01 : f64, step = -2.500000e-01 : f64}> : (index) -> tensor<?xbf16>

// slice: Python's bounds (omitted start, stop or step; negative ones), static and ? extents.
fusion.fusion @slices(%x: tensor<?x64x9xbf16>) -> (tensor<?x32x4xbf16>, tensor<?x2x9xbf16>) {
  %a = fusion.slice %x [:, 32:, :8:2] : tensor<?x64x9xbf16> -> tensor<?x32x4xbf16>
  %b = fusion.slice %x [-3:-1, -10:-8, :] : tensor<?x64x9xbf16> -> tensor<?x2x9xbf16>
  fusion.output %a, %b : tensor<?x32x4xbf16>, tensor<?x2x9xbf16>
}

// CHECK-LABEL: fusion.fusion @slices
// CHECK:       %a = fusion.slice %x [:, 32:, :8:2] : tensor<?x64x9xbf16> -> tensor<?x32x4xbf16>
// CHECK-NEXT:  %b = fusion.slice %x [-3:-1, -10:-8, :] : tensor<?x64x9xbf16> -> tensor<?x2x9xbf16>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "slices"
// CHECK-GENERIC:         %a = "fusion.slice"(%x) <{starts = array<i64: 0, 32, 0>, stops = array<i64: 9223372036854775807, 9223372036854775807, 8>, steps = array<i64: 1, 1, 2>}> : (tensor<?x64x9xbf16>) -> tensor<?x32x4xbf16>

// take_along_axis: an index of the input's rank, the result of the index's shape.
fusion.fusion @take(%x: tensor<?x50257xbf16>, %t: tensor<?x1xi64>, %k: tensor<8x3xi32>, %y: tensor<8x?xf32>) -> (tensor<?x1xbf16>, tensor<8x3xf32>) {
  %a = fusion.take_along_axis %x, %t[1] : tensor<?x50257xbf16>, tensor<?x1xi64> -> tensor<?x1xbf16>
  %b = fusion.take_along_axis %y, %k[1] : tensor<8x?xf32>, tensor<8x3xi32> -> tensor<8x3xf32>
  fusion.output %a, %b : tensor<?x1xbf16>, tensor<8x3xf32>
}

// CHECK-LABEL: fusion.fusion @take
// CHECK-NEXT:    %a = fusion.take_along_axis %x, %t[1] : tensor<?x50257xbf16>, tensor<?x1xi64> -> tensor<?x1xbf16>
// CHECK-NEXT:    %b = fusion.take_along_axis %y, %k[1] : tensor<8x?xf32>, tensor<8x3xi32> -> tensor<8x3xf32>

// scatter: an index of the input's rank, a src of the index's shape or a scalar, the input's type.
fusion.fusion @scatter(%x: tensor<?x9xf32>, %i: tensor<?x2xi64>, %v: tensor<?x2xf32>, %c: f32, %b: tensor<4x?xi1>, %j: tensor<1x?xi32>, %w: tensor<1x?xi1>) -> (tensor<?x9xf32>, tensor<?x9xf32>, tensor<4x?xi1>) {
  %y = fusion.scatter %x, %i, %v[1] : tensor<?x9xf32>, tensor<?x2xi64>, tensor<?x2xf32> -> tensor<?x9xf32>
  %z = fusion.scatter %x, %i, %c[1] : tensor<?x9xf32>, tensor<?x2xi64>, f32 -> tensor<?x9xf32>
  %m = fusion.scatter %b, %j, %w[0] : tensor<4x?xi1>, tensor<1x?xi32>, tensor<1x?xi1> -> tensor<4x?xi1>
  fusion.output %y, %z, %m : tensor<?x9xf32>, tensor<?x9xf32>, tensor<4x?xi1>
}

// CHECK-LABEL: fusion.fusion @scatter
// CHECK-NEXT:    %y = fusion.scatter %x, %i, %v[1] : tensor<?x9xf32>, tensor<?x2xi64>, tensor<?x2xf32> -> tensor<?x9xf32>
// CHECK-NEXT:    %z = fusion.scatter %x, %i, %c[1] : tensor<?x9xf32>, tensor<?x2xi64>, f32 -> tensor<?x9xf32>
// CHECK-NEXT:    %m = fusion.scatter %b, %j, %w[0] : tensor<4x?xi1>, tensor<1x?xi32>, tensor<1x?xi1> -> tensor<4x?xi1>

// take: the taken dim replaced by the index's shape (a scalar index drops it).
fusion.fusion @take_rows(%w: tensor<32000x?xbf16>, %i: tensor<?x?xi64>, %j: tensor<5xi32>, %s: i64) -> (tensor<?x?x?xbf16>, tensor<32000x5xbf16>, tensor<?xbf16>) {
  %e = fusion.take %w, %i dim 0 : tensor<32000x?xbf16>, tensor<?x?xi64> -> tensor<?x?x?xbf16>
  %c = fusion.take %w, %j dim 1 : tensor<32000x?xbf16>, tensor<5xi32> -> tensor<32000x5xbf16>
  %r = fusion.take %w, %s dim 0 : tensor<32000x?xbf16>, i64 -> tensor<?xbf16>
  fusion.output %e, %c, %r : tensor<?x?x?xbf16>, tensor<32000x5xbf16>, tensor<?xbf16>
}

// CHECK-LABEL: fusion.fusion @take_rows
// CHECK-NEXT:    %e = fusion.take %w, %i dim 0 : tensor<32000x?xbf16>, tensor<?x?xi64> -> tensor<?x?x?xbf16>
// CHECK-NEXT:    %c = fusion.take %w, %j dim 1 : tensor<32000x?xbf16>, tensor<5xi32> -> tensor<32000x5xbf16>
// CHECK-NEXT:    %r = fusion.take %w, %s dim 0 : tensor<32000x?xbf16>, i64 -> tensor<?xbf16>

// pad: widths per dim (negative ones crop), a scalar fill; cat: operands along a dim.
fusion.fusion @resize(%x: tensor<?x4xbf16>, %y: tensor<?x5xbf16>, %v: bf16) -> (tensor<?x7xbf16>, tensor<?x13xbf16>) {
  %p = fusion.pad %x low [0, -1] high [0, 4] value %v : tensor<?x4xbf16> -> tensor<?x7xbf16>
  %c = fusion.cat %x, %y, %x dim 1 : tensor<?x4xbf16>, tensor<?x5xbf16>, tensor<?x4xbf16> -> tensor<?x13xbf16>
  fusion.output %p, %c : tensor<?x7xbf16>, tensor<?x13xbf16>
}

// CHECK-LABEL: fusion.fusion @resize
// CHECK-NEXT:    %p = fusion.pad %x low [0, -1] high [0, 4] value %v : tensor<?x4xbf16> -> tensor<?x7xbf16>
// CHECK-NEXT:    %c = fusion.cat %x, %y, %x dim 1 : tensor<?x4xbf16>, tensor<?x5xbf16>, tensor<?x4xbf16> -> tensor<?x13xbf16>

// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "resize"
// CHECK-GENERIC:         %p = "fusion.pad"(%x, %v) <{low = array<i64: 0, -1>, high = array<i64: 0, 4>}> : (tensor<?x4xbf16>, bf16) -> tensor<?x7xbf16>
// CHECK-GENERIC-NEXT:    %c = "fusion.cat"(%x, %y, %x) <{dim = 1 : i64}> : (tensor<?x4xbf16>, tensor<?x5xbf16>, tensor<?x4xbf16>) -> tensor<?x13xbf16>

// Reshapes: the one ? inferred; run-time extents kept at their dims (the heads split of a
// symbolic batch and sequence).
fusion.fusion @reshapes(%x: tensor<?x?x768xf32>) -> (tensor<?x?x12x64xf32>, tensor<?x12x64xf32>) {
  %h = fusion.reshape %x kept [0, 1] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  %f = fusion.reshape %x : tensor<?x?x768xf32> -> tensor<?x12x64xf32>
  fusion.output %h, %f : tensor<?x?x12x64xf32>, tensor<?x12x64xf32>
}

// CHECK-LABEL: fusion.fusion @reshapes
// CHECK-NEXT:    %h = fusion.reshape %x kept [0, 1] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
// CHECK-NEXT:    %f = fusion.reshape %x : tensor<?x?x768xf32> -> tensor<?x12x64xf32>
// CHECK-GENERIC-LABEL: "fusion.fusion"() <{sym_name = "reshapes"
// CHECK-GENERIC:         %h = "fusion.reshape"(%x) <{kept = array<i64: 0, 1>}> : (tensor<?x?x768xf32>) -> tensor<?x?x12x64xf32>
