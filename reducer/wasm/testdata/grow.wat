;; grow grows its memory by a page each step and returns the memory's size
;; in pages as its state: a fresh instance has 1 page, so every step
;; returns 2 when no memory survives a step.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "step") (param i32 i32) (result i32 i32)
    (drop (memory.grow (i32.const 1)))
    (i64.store (i32.const 64) (i64.const 0x41657461747365a1))
    (i32.store8 (i32.const 72) (memory.size))
    (i32.const 64) (i32.const 9)))
