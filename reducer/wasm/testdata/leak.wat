;; leak counts its steps in a global and in memory and returns both as its
;; state, the CBOR array [global, memory]: a host that resets its instances
;; to their instantiated image gets [1, 1] from every step.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (global $steps (mut i32) (i32.const 0))
  (func (export "step") (param i32 i32) (result i32 i32)
    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
    (i32.store (i32.const 8) (i32.add (i32.load (i32.const 8)) (i32.const 1)))
    ;; a1 65 "state" 43 82 <g> <m>
    (i64.store (i32.const 64) (i64.const 0x43657461747365a1))
    (i32.store8 (i32.const 72) (i32.const 0x82))
    (i32.store8 (i32.const 73) (global.get $steps))
    (i32.store8 (i32.const 74) (i32.load (i32.const 8)))
    (i32.const 64) (i32.const 11)))
