;; bigmem declares 2000 pages (125 MiB) of memory, over the default cap.
(module
  (memory (export "memory") 2000)
  (func (export "alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "step") (param i32 i32) (result i32 i32)
    (i32.const 0) (i32.const 0)))
