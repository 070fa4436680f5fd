// Option errors end in one line on stderr and a non-zero exit, never a traceback.
// RUN: not fuser-opt %s -p fuser-schedule 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16x16"}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16x16,16,4"}' 2>&1 | filecheck %s --check-prefix=COUNT3
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16x16,16x1"}' 2>&1 | filecheck %s --check-prefix=RANK
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16x15,16"}' 2>&1 | filecheck %s --check-prefix=STATIC
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16xa,16"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16x16,8"}' 2>&1 | filecheck %s --check-prefix=MISMATCH
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16x16,16" arch=sm90}' 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: not fuser-opt %s -p 'fuser-schedule{shapes="16x16,16" sm_count=0}' 2>&1 | filecheck %s --check-prefix=SMS

fusion.fusion @f(%x: tensor<?x16xf32>, %bias: tensor<?xf32>) -> (tensor<?x16xf32>) {
  %n = fusion.dim %x[0] : tensor<?x16xf32>
  %b = fusion.broadcast_in_dim %bias [1] sizes(%n) : tensor<?xf32> -> tensor<?x16xf32>
  %y = fusion.add %x, %b : tensor<?x16xf32>
  fusion.output %y : tensor<?x16xf32>
}

// MISSING: fuser-opt: error: fuser-schedule: input #0 (%x) of fusion @f has dynamic dims [?, 16]: give every tensor input's shape with shapes="AxB,..."
// MISSING-NOT: Traceback
// COUNT: fuser-opt: error: fuser-schedule: shapes gives 1 shape(s), but fusion @f has 2 tensor input(s)
// COUNT3: fuser-opt: error: fuser-schedule: shapes gives 3 shape(s), but fusion @f has 2 tensor input(s)
// RANK: fuser-opt: error: fuser-schedule: shape [16, 1] of input #1 (%bias) of fusion @f does not match its type tensor<?xf32>
// STATIC: fuser-opt: error: fuser-schedule: shape [16, 15] of input #0 (%x) of fusion @f does not match its type tensor<?x16xf32>
// SYNTAX: fuser-opt: error: fuser-schedule: bad shape '16xa' in shapes="16xa,16": expected one shape per tensor input, separated by ',': extents joined by 'x' (16384x4096), '()' for a rank-0 tensor
// MISMATCH: fuser-opt: error: no scheduler accepts fusion @f:
// MISMATCH-NEXT: transpose: not a pointwise fusion (the pointwise scheduler says why)
// MISMATCH-NEXT: pointwise: 'fusion.broadcast_in_dim' cannot broadcast extent 8 to 16 in dim 1
// ARCH: fuser-opt: error: fuser-schedule: bad arch 'sm90': expected sm_<digits>, like sm_90
// SMS: fuser-opt: error: fuser-schedule: sm_count must be at least 1, got 0
