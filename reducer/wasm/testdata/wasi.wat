;; wasi imports WASI's clock and random_get and returns what they give as its
;; state: {state: bstr([time, random byte])}, as the CBOR array of two
;; unsigned integers (time as a 64-bit one).
(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (func (export "step") (param i32 i32) (result i32 i32)
    (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 200)))
    (i32.store8 (i32.const 300) (i32.const 0x55))
    (drop (call $random (i32.const 300) (i32.const 1)))
    ;; a1 65 "state" 4c 82 1b <time BE64> 18 <byte>
    (i64.store (i32.const 64) (i64.const 0x4c657461747365a1))
    (i32.store8 (i32.const 72) (i32.const 0x82))
    (i32.store8 (i32.const 73) (i32.const 0x1b))
    (i64.store (i32.const 74) (i64.extend_i32_u (i32.const 0)))
    (i64.store (i32.const 74) (call $bswap64 (i64.load (i32.const 200))))
    (i32.store8 (i32.const 82) (i32.const 0x18))
    (i32.store8 (i32.const 83) (i32.load8_u (i32.const 300)))
    (i32.const 64) (i32.const 20))
  (func $bswap64 (param $x i64) (result i64)
    (local $r i64) (local $i i32)
    (loop $l
      (local.set $r (i64.or (i64.shl (local.get $r) (i64.const 8)) (i64.and (local.get $x) (i64.const 0xff))))
      (local.set $x (i64.shr_u (local.get $x) (i64.const 8)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 8))))
    (local.get $r)))
