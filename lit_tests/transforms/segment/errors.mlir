// Errors end in one line on stderr and a non-zero exit, never a traceback: bad options, and an
// op that no scheduler accepts even alone (a batched matmul of more batches than a grid's z
// dimension holds).
// RUN: not fuser-opt %s -p 'fuser-segment{merge=never}' 2>&1 | filecheck %s --check-prefix=RULE
// RUN: not fuser-opt %s -p fuser-segment 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not fuser-opt %s -p 'fuser-segment{shapes="2x8x16"}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not fuser-opt %s -p 'fuser-segment{shapes="8xk,16x4"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not fuser-opt %s -p 'fuser-segment{shapes="2x8x16,2x16x4" arch=hopper}' 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: not fuser-opt %s -p 'fuser-segment{shapes="2x8x16,2x16x4" sm_count=0}' 2>&1 | filecheck %s --check-prefix=SMS
// RUN: not fuser-opt %s -p 'fuser-segment{shapes="70000x8x16,70000x16x4"}' 2>&1 | filecheck %s --check-prefix=MATMUL

fusion.fusion @mm(%a: tensor<?x?x?xf32>, %b: tensor<?x?x?xf32>) -> (tensor<?x?x?xf32>) {
  %m = fusion.matmul %a, %b : tensor<?x?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?x?xf32>
  %r = fusion.relu %m : tensor<?x?x?xf32>
  fusion.output %r : tensor<?x?x?xf32>
}

// RULE: fuser-opt: error: fuser-segment: unknown merge rule 'never': expected one of none, standalone-host-ops
// RULE-NOT: Traceback
// MISSING: fuser-opt: error: fuser-segment: input #0 (%a) of fusion @mm has dynamic dims [?, ?, ?]: give every tensor input's shape with shapes="AxB,..."
// COUNT: fuser-opt: error: fuser-segment: shapes gives 1 shape(s), but fusion @mm has 2 tensor input(s)
// SYNTAX: fuser-opt: error: fuser-segment: bad shape '8xk' in shapes="8xk,16x4": expected one shape per tensor input, separated by ',': extents joined by 'x' (16384x4096), '()' for a rank-0 tensor
// ARCH: fuser-opt: error: fuser-segment: bad arch 'hopper': expected sm_<digits>, like sm_90
// SMS: fuser-opt: error: fuser-segment: sm_count must be at least 1, got 0
// MATMUL: fuser-opt: error: fusion @mm: no scheduler accepts segment g0{matmul %m}: transpose: not a pointwise fusion (the pointwise scheduler says why); pointwise: 'fusion.matmul' (%m) is a matmul; reduction: {{.*}}; persistent: {{.*}}; matmul: 70000 leading (split and batch) indices: more than the 65535 blocks of gridDim.z
// MATMUL-NOT: Traceback
