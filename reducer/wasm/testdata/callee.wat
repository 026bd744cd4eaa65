;; callee's step calls $one, its last function, and returns the stub's
;; output: TestCompilePanic gives $one a type out of range, on which
;; wazero's validator panics.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (data (i32.const 16) "\a4\65\73\74\61\74\65\47\d9\d9\f7\a1\61\6e\07\6d\64\6f\6d\61\69\6e\5f\65\76\65\6e\74\73\80\67\65\66\66\65\63\74\73\80\63\61\6e\6e\f6")
  (func (export "step") (param i32 i32) (result i32 i32)
    (i32.const 16) (i32.add (i32.const 43) (call $one)))
  (func $one (result i32) (i32.const 1)))
