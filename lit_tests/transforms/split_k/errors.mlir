// Bad options end in one line on stderr and a non-zero exit, never a traceback.
// RUN: not fuser-opt %s -p 'split-k{splits=0}' 2>&1 | filecheck %s --check-prefix=SPLITS
// RUN: not fuser-opt %s -p 'split-k{shapes="8x16,16x4" sm_count=0}' 2>&1 | filecheck %s --check-prefix=SMS
// RUN: not fuser-opt %s -p split-k 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not fuser-opt %s -p 'split-k{shapes="8x16"}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not fuser-opt %s -p 'split-k{shapes="8xk,16x4"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not fuser-opt %s -p 'split-k{shapes="8x16,17x4"}' 2>&1 | filecheck %s --check-prefix=CLASH
// RUN: not fuser-opt %s -p 'split-k{shapes="8x16,16x4" arch=hopper}' 2>&1 | filecheck %s --check-prefix=ARCH

fusion.fusion @mm(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %m = fusion.matmul %a, %b : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  fusion.output %m : tensor<?x?xf32>
}

// SPLITS: fuser-opt: error: split-k: splits must be at least 1 (1 never splits), got 0
// SPLITS-NOT: Traceback
// SMS: fuser-opt: error: split-k: sm_count must be at least 1, got 0
// MISSING: fuser-opt: error: split-k: input #0 (%a) of fusion @mm has dynamic dims [?, ?]: give every tensor input's shape with shapes="AxB,..."
// COUNT: fuser-opt: error: split-k: shapes gives 1 shape(s), but fusion @mm has 2 tensor input(s)
// SYNTAX: fuser-opt: error: split-k: bad shape '8xk' in shapes="8xk,16x4": expected one shape per tensor input, separated by ',': extents joined by 'x' (16384x4096), '()' for a rank-0 tensor
// CLASH: fuser-opt: error: split-k: the shapes do not fit fusion @mm: 'fusion.matmul' cannot multiply shapes [8, 16] and [17, 4]
// CLASH-NOT: Traceback
// ARCH: fuser-opt: error: split-k: bad arch 'hopper': expected sm_<digits>, like sm_90
