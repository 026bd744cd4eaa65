;; nomemory does not export its memory.
(module
  (memory 1)
  (func (export "alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "step") (param i32 i32) (result i32 i32)
    (i32.const 0) (i32.const 0)))
