;; leaktable is leak with a table it changes (table.set): such an instance
;; cannot be reset, so the host runs each step in a fresh one; still [1, 1].
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (global $steps (mut i32) (i32.const 0))
  (table $t 1 funcref)
  (func $nop)
  (elem declare func $nop)
  (func (export "step") (param i32 i32) (result i32 i32)
    (table.set $t (i32.const 0) (ref.func $nop))
    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
    (i32.store (i32.const 8) (i32.add (i32.load (i32.const 8)) (i32.const 1)))
    ;; a1 65 "state" 43 82 <g> <m>
    (i64.store (i32.const 64) (i64.const 0x43657461747365a1))
    (i32.store8 (i32.const 72) (i32.const 0x82))
    (i32.store8 (i32.const 73) (global.get $steps))
    (i32.store8 (i32.const 74) (i32.load (i32.const 8)))
    (i32.const 64) (i32.const 11)))
