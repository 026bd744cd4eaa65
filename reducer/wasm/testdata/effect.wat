;; effect returns the state {pc: Idle, remaining: 0} and the effect
;; timer.set {deliver_at_ns: 5, key: null}, whatever it is sent: a world
;; whose defmodule does not declare timer.set in effects_emitted refuses it.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $n)))
    (local.get $p))
  (data (i32.const 16) "\a4\65\73\74\61\74\65\58\1a\a2\62\70\63\a1\64\24\74\61\67\64\49\64\6c\65\69\72\65\6d\61\69\6e\69\6e\67\00\6d\64\6f\6d\61\69\6e\5f\65\76\65\6e\74\73\80\67\65\66\66\65\63\74\73\81\a2\64\6b\69\6e\64\69\74\69\6d\65\72\2e\73\65\74\6b\70\61\72\61\6d\73\5f\63\62\6f\72\55\a2\6d\64\65\6c\69\76\65\72\5f\61\74\5f\6e\73\05\63\6b\65\79\f6\63\61\6e\6e\f6")
  (func (export "step") (param i32 i32) (result i32 i32)
    (i32.const 16) (i32.const 114)))
