// fuser-plan-memory on hand-written programs. Static shapes: every size and offset folds to a
// constant, and first-fit reuses freed bytes (%t4 goes where %t0 was). Dynamic shapes: the
// sizes are arith on host.dim, the offsets arith.cmpi/select/minui over them. A returned
// tensor and a program with streams are left alone.
// RUN: fuser-opt %s -p fuser-plan-memory | filecheck %s
// RUN: fuser-opt %s -p fuser-plan-memory | fuser-opt | filecheck %s

host.program @staggered() {
  %t0 = host.allocate() : tensor<3xf32>
  %t1 = host.allocate() : tensor<100xf32>
  %t2 = host.allocate() : tensor<40xf32>
  host.deallocate %t0 : tensor<3xf32>
  %t3 = host.allocate() : tensor<70xf32>
  host.deallocate %t1 : tensor<100xf32>
  %t4 = host.allocate() : tensor<5xf32>
  host.deallocate %t2 : tensor<40xf32>
  host.deallocate %t3 : tensor<70xf32>
  host.deallocate %t4 : tensor<5xf32>
  host.return
}

// CHECK-LABEL: host.program @staggered() {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:     %[[C768:.*]] = arith.constant 768 : index
// CHECK-DAG:     %[[C1024:.*]] = arith.constant 1024 : index
// CHECK-DAG:     %[[C1536:.*]] = arith.constant 1536 : index
// CHECK:         %workspace = host.workspace %[[C1536]]
// CHECK-NEXT:    %t0 = host.workspace_view %workspace[%[[C0]]] () : tensor<3xf32>
// CHECK-NEXT:    %t1 = host.workspace_view %workspace[%[[C256]]] () : tensor<100xf32>
// CHECK-NEXT:    %t2 = host.workspace_view %workspace[%[[C768]]] () : tensor<40xf32>
// CHECK-NEXT:    %t3 = host.workspace_view %workspace[%[[C1024]]] () : tensor<70xf32>
// CHECK-NEXT:    %t4 = host.workspace_view %workspace[%[[C0]]] () : tensor<5xf32>
// CHECK-NEXT:    host.release %workspace
// CHECK-NEXT:    host.return

host.program @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %n = host.dim %x[0] : tensor<?xf32>
  %a = host.allocate(%n) : tensor<?xf32>
  %b = host.allocate(%n) : tensor<?xf32>
  host.deallocate %a : tensor<?xf32>
  %y = host.allocate(%n) : tensor<?xf32>
  host.deallocate %b : tensor<?xf32>
  host.return %y : tensor<?xf32>
}

// CHECK-LABEL: host.program @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
// CHECK:         %a_bytes = arith.muli
// CHECK:         %workspace_bytes = arith.maxui %a_bytes, %{{.*}} : index
// CHECK-NEXT:    %workspace = host.workspace %workspace_bytes
// CHECK-NEXT:    %a = host.workspace_view %workspace[%a_at] (%n) : tensor<?xf32>
// CHECK-NEXT:    %b = host.workspace_view %workspace[%a_bytes] (%n) : tensor<?xf32>
// CHECK-NEXT:    %y = host.allocate(%n) : tensor<?xf32>
// CHECK-NEXT:    host.release %workspace
// CHECK-NEXT:    host.return %y : tensor<?xf32>

host.program @streams(%x: tensor<?xf32>) {
  %n = host.dim %x[0] : tensor<?xf32>
  %c1 = arith.constant 1 : index
  %s = host.stream %c1
  %a = host.allocate(%n) : tensor<?xf32>
  host.set_current_stream %s
  host.deallocate %a : tensor<?xf32>
  host.return
}

// CHECK-LABEL: host.program @streams(%x: tensor<?xf32>) {
// CHECK:         %a = host.allocate(%n) : tensor<?xf32>
// CHECK-NOT:     host.workspace
