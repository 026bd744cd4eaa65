;; traps traps in the way its event says: the event's value is a CBOR uint
;; below 24, the envelope's last byte. 0 unreachable, 1 a load out of
;; bounds, 2 a division by zero, 3 a division that overflows, 4 a
;; conversion of NaN to an integer, 5 a call_indirect past its table,
;; 6 a call_indirect to a function of another type, 7 a memory.fill past
;; the memory; anything else returns 0 bytes.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (type $nullary (func))
  (type $unary (func (param i32) (result i32)))
  (func $id (param i32) (result i32) (local.get 0))
  (table 1 funcref)
  (elem (i32.const 0) $id)
  (func (export "step") (param $p i32) (param $len i32) (result i32 i32)
    block $other
    block $fill
    block $mismatch
    block $table
    block $nan
    block $overflow
    block $div
    block $oob
    block $unreachable
      local.get $p
      local.get $len
      i32.add
      i32.const 1
      i32.sub
      i32.load8_u
      br_table $unreachable $oob $div $overflow $nan $table $mismatch $fill $other
    end
      unreachable
    end
      (drop (i32.load (i32.const -1)))
    end
      (drop (i32.div_s (i32.const 1) (i32.const 0)))
    end
      (drop (i32.div_s (i32.const 0x80000000) (i32.const -1)))
    end
      (drop (i32.trunc_f32_s (f32.const nan)))
    end
      (call_indirect (type $nullary) (i32.const 5))
    end
      (call_indirect (type $nullary) (i32.const 0))
    end
      (memory.fill (i32.const 65000) (i32.const 0) (i32.const 1000))
    end
    (i32.const 0) (i32.const 0)))
