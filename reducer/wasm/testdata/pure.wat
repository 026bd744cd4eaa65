;; pure is a pure module (it exports run): it returns the envelope it was
;; sent as its output, {output: bstr(input)}, so tests read what the host
;; sends a pure module.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func $alloc (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "run") (param $in i32) (param $len i32) (result i32 i32)
    (local $out i32)
    (local.set $out (call $alloc (i32.add (local.get $len) (i32.const 16))))
    ;; a1 66 "output" 59 <len BE16> <input>
    (i32.store8 (local.get $out) (i32.const 0xa1))
    (i32.store8 offset=1 (local.get $out) (i32.const 0x66))
    (i32.store8 offset=2 (local.get $out) (i32.const 0x6f))
    (i32.store8 offset=3 (local.get $out) (i32.const 0x75))
    (i32.store8 offset=4 (local.get $out) (i32.const 0x74))
    (i32.store8 offset=5 (local.get $out) (i32.const 0x70))
    (i32.store8 offset=6 (local.get $out) (i32.const 0x75))
    (i32.store8 offset=7 (local.get $out) (i32.const 0x74))
    (i32.store8 offset=8 (local.get $out) (i32.const 0x59))
    (i32.store8 offset=9 (local.get $out) (i32.shr_u (local.get $len) (i32.const 8)))
    (i32.store8 offset=10 (local.get $out) (local.get $len))
    (memory.copy (i32.add (local.get $out) (i32.const 11)) (local.get $in) (local.get $len))
    (local.get $out)
    (i32.add (local.get $len) (i32.const 11))))
