;; growcap asks for 100000 pages (6 GiB), past any cap: memory.grow returns
;; -1 and the module traps.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "step") (param i32 i32) (result i32 i32)
    (if (i32.eq (memory.grow (i32.const 100000)) (i32.const -1)) (then unreachable))
    (i32.const 0) (i32.const 0)))
