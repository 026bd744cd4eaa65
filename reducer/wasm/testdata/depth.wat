;; depth nests its calls as deep as its event says: the event's value is a
;; CBOR uint16 (19 hi lo), the last two bytes of the envelope, and the step
;; calls $down that many times within itself, so the deepest call is at
;; depth n+1. It returns the stub's output, {state: {n: 7}, ...}.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (data (i32.const 16) "\a4\65\73\74\61\74\65\47\d9\d9\f7\a1\61\6e\07\6d\64\6f\6d\61\69\6e\5f\65\76\65\6e\74\73\80\67\65\66\66\65\63\74\73\80\63\61\6e\6e\f6")
  (func $down (param $n i32)
    (if (local.get $n)
      (then (call $down (i32.sub (local.get $n) (i32.const 1))))))
  (func (export "step") (param $p i32) (param $len i32) (result i32 i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $p) (local.get $len)))
    (call $down
      (i32.or
        (i32.shl (i32.load8_u (i32.sub (local.get $end) (i32.const 2))) (i32.const 8))
        (i32.load8_u (i32.sub (local.get $end) (i32.const 1)))))
    (i32.const 16) (i32.const 44)))
