;; startloop's start function never returns: the host runs it under a
;; step's deadline and refuses the module.
(module
  (memory (export "memory") 1)
  (func (export "alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "step") (param i32 i32) (result i32 i32)
    (i32.const 0) (i32.const 0))
  (func $start
    (loop $forever (br $forever)))
  (start $start))
