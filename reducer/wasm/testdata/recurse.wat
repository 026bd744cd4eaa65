;; recurse calls itself for ever: the step ends at the host's call depth
;; limit (wasm.MaxCallDepth), before any engine's own stack limit.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func $again
    (call $again))
  (func (export "step") (param i32 i32) (result i32 i32)
    (call $again)
    unreachable))
