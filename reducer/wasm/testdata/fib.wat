;; fib computes fib(n) by naive recursion, n the event's value (a CBOR uint
;; below 24, the envelope's last byte): no loop, few frames deep, and
;; fib(n) calls. It returns {state: fib(n)} (fib(n) below 65536).
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add
        (call $fib (i32.sub (local.get $n) (i32.const 1)))
        (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  ;; a1 65 "state" 43 19 hi lo
  (data (i32.const 64) "\a1\65\73\74\61\74\65\43\19")
  (func (export "step") (param $p i32) (param $len i32) (result i32 i32)
    (local $f i32)
    (local.set $f (call $fib (i32.load8_u (i32.sub (i32.add (local.get $p) (local.get $len)) (i32.const 1)))))
    (i32.store8 (i32.const 73) (i32.shr_u (local.get $f) (i32.const 8)))
    (i32.store8 (i32.const 74) (local.get $f))
    (i32.const 64) (i32.const 11)))
