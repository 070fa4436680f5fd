// fuser-lower-host errors: options that do not fit the fusion, and a segment whose named
// scheduler rejects it. Each is one diagnostic line, no traceback.
// RUN: not fuser-opt %s -p 'fuser-lower-host{shapes="8x16,8x16"}' 2>&1 | filecheck %s --check-prefix=COUNT
// RUN: not fuser-opt %s -p 'fuser-lower-host{shapes="8xq"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not fuser-opt %s -p 'fuser-lower-host' 2>&1 | filecheck %s --check-prefix=DYNAMIC
// RUN: not fuser-opt %s -p 'fuser-lower-host{shapes="8x16"}' 2>&1 | filecheck %s --check-prefix=LABEL

fusion.fusion @f(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %y = fusion.segment "reduction" (%x) : (tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  ^bb0(%x0: tensor<?x?xf32>):
    %e = fusion.exp %x0 : tensor<?x?xf32>
    fusion.yield %e : tensor<?x?xf32>
  }
  fusion.output %y : tensor<?x?xf32>
}

// COUNT:   fuser-opt: error: fuser-lower-host: shapes gives 2 shape(s), but fusion @f has 1 tensor input(s)
// SYNTAX:  fuser-opt: error: fuser-lower-host: bad shape '8xq' in shapes="8xq": expected one shape per tensor input
// DYNAMIC: fuser-opt: error: fuser-lower-host: input #0 (%x) of fusion @f has dynamic dims [?, ?]: give every tensor input's shape with shapes="AxB,..."
// LABEL:   fuser-opt: error: segment @f_s0 names scheduler 'reduction', which rejects it: {{.+}}
// COUNT-NOT: Traceback
