// Vectorized vs scalar fallback: an innermost extent divisible by 4 takes 16-byte accesses, an
// odd one (1001) scalar accesses, with the same template.
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="64x1024"}' | filecheck %s --check-prefix=VEC
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="64x1001"}' | filecheck %s --check-prefix=SCALAR
// RUN: fuser-opt %s -p 'fuser-schedule{shapes="64x1022"}' | filecheck %s --check-prefix=VEC2

fusion.fusion @sig(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %y = fusion.sigmoid %x : tensor<?x?xf32>
  fusion.output %y : tensor<?x?xf32>
}

// VEC:      vector_width=4, unroll=1, index_bits=32, grid_2d=True
// VEC-SAME: fuser.launch = "grid=[2, 64, 1] block=[128, 1, 1] smem=0"
// VEC:      %row_vectors = arith.divsi
// VEC:      kernel.load %x[%elem] : !kernel.tensor<f32, 2>, i32 -> vector<4xf32>
// VEC:      scf.for %j
// VEC:        %[[N:.*]] = arith.negf %{{.*}} : f32
// VEC-NEXT:   %[[E:.*]] = math.exp %[[N]] : f32
// VEC-NEXT:   %[[D:.*]] = arith.addf %{{.*}}, %[[E]] : f32
// VEC-NEXT:   %{{.*}} = arith.divf %{{.*}}, %[[D]] : f32
// VEC:      kernel.store %{{.*}}, %y[%elem_1] : vector<4xf32>, !kernel.tensor<f32, 2>, i32

// SCALAR:     vector_width=1, unroll=1, index_bits=32, grid_2d=True
// SCALAR-SAME: fuser.launch = "grid=[8, 64, 1] block=[128, 1, 1] smem=0"
// SCALAR-NOT: vector<
// SCALAR:     %x_buf = kernel.alloc : !kernel.array<1xf32, local>
// SCALAR:     kernel.load %x[%elem] : !kernel.tensor<f32, 2>, i32 -> f32
// SCALAR-NOT: scf.for
// SCALAR:     kernel.store %{{.*}}, %y[%elem_1] : f32, !kernel.tensor<f32, 2>, i32

// VEC2: vector_width=2
// VEC2-SAME: fuser.launch = "grid=[4, 64, 1] block=[128, 1, 1] smem=0"
// VEC2: kernel.load %x[%elem] : !kernel.tensor<f32, 2>, i32 -> vector<2xf32>
