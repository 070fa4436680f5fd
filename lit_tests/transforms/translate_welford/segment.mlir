// fuser-segment (and the compiler, for a fusion one kernel runs) decides on each segment holding
// a Welford op and logs why (FUSER_DUMP=segmenter_log): kept for a row too long for registers
// (the looped scheduler then takes the whole fusion: a Welford pass and a normalization pass)
// and for a reduction over outer dims (a grid reduction); where the persistent
// scheduler takes the two-pass form, AUTO_TRANSLATE decides by the scheduler that takes the
// Welford form (the checks accept either setting of the table). A translated segment carries the
// reason as `fuser.welford`. welford=always translates before segmenting, welford=never never.
// RUN: env FUSER_DUMP=segmenter_log fuser-run %s --fusion normalize --shapes 4x100000 --compile-only 2>&1 | filecheck %s --check-prefix=LONG
// RUN: env FUSER_DUMP=segmenter_log fuser-run %s --fusion columns --shapes 5000x64 --compile-only 2>&1 | filecheck %s --check-prefix=COLUMNS
// RUN: env FUSER_DUMP=segmenter_log fuser-run %s --fusion normalize --shapes 64x1000 --compile-only 2>&1 | filecheck %s --check-prefix=FITS
// RUN: fuser-opt %s --split-input-file -p 'fuser-segment{shapes="64x1000" welford=always}' | filecheck %s --check-prefix=ALWAYS
// RUN: fuser-opt %s --split-input-file -p 'fuser-segment{shapes="64x1000" welford=never}' | filecheck %s --check-prefix=NEVER

fusion.fusion @normalize(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %d = fusion.dim %x[1] : tensor<?x?xf32>
  %var, %mean = fusion.var_mean %x [1] correction(0) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  %mean_b = fusion.broadcast_in_dim %mean [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %var_b = fusion.broadcast_in_dim %var [0] sizes(%d) : tensor<?xf32> -> tensor<?x?xf32>
  %centered = fusion.sub %x, %mean_b : tensor<?x?xf32>
  %y = fusion.div %centered, %var_b : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// LONG:      ===== FUSER_DUMP segmenter_log: @normalize =====
// LONG-NEXT: whole fusion, welford: kept: the persistent scheduler rejects the two-pass form (row of 100000 f32 elements does not fit in registers: at most 20480 (1024 threads x 20 elements of 2 register(s) each)); a row walked once per pass reads it once more in two passes than in one Welford pass
// LONG-NEXT: @normalize for sm_90: 1 kernel
// LONG-NEXT:   #0 fuser_normalize_looped_0 [looped]

// FITS:      ===== FUSER_DUMP segmenter_log: @normalize =====
// FITS-NEXT: whole fusion, welford: {{translated|kept}}: the persistent scheduler accepts the two-pass form; the Welford form goes to persistent (AUTO_TRANSLATE['persistent'] is {{True|False}})

// ALWAYS-LABEL: fusion.fusion @normalize
// ALWAYS-NEXT:    %y = fusion.segment "persistent" (%x) : (tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// ALWAYS:           %x_sum = fusion.sum %x_1 [1] : tensor<?x?xf32> -> tensor<?xf32>
// ALWAYS:           %x_m2 = fusion.sum %x_dev2 [1] : tensor<?x?xf32> -> tensor<?xf32>
// ALWAYS-NOT:       fusion.var_mean

// NEVER-LABEL: fusion.fusion @normalize
// NEVER-NEXT:    fusion.segment "persistent" (%x) : (tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// NEVER:         fusion.var_mean %x_1 [1] correction(0)

// -----

// A reduction over the outer dim: two passes would keep columns on chip across blocks.
fusion.fusion @columns(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %n = fusion.dim %x[0] : tensor<?x?xf32>
  %var, %mean = fusion.var_mean %x [0] correction(1) : tensor<?x?xf32> -> tensor<?xf32>, tensor<?xf32>
  %mean_b = fusion.broadcast_in_dim %mean [1] sizes(%n) : tensor<?xf32> -> tensor<?x?xf32>
  %y = fusion.sub %x, %mean_b : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// COLUMNS:      ===== FUSER_DUMP segmenter_log: @columns =====
// COLUMNS:      welford g{{[0-9]+}}{var_mean %var}: kept: the reduced dims are not the innermost: two passes over columns would keep them on chip across blocks (a grid reduction), and the persistent scheduler takes rows
// COLUMNS-NEXT: segments: "reduction" g{{[0-9]+}}{var_mean %var}, "pointwise"

// ALWAYS-LABEL: fusion.fusion @columns
// ALWAYS-NOT:     fusion.var_mean
// ALWAYS:         fusion.sum %x{{.*}} [0]
