// A small CBOR reader and writer for the values AIR is made of: unsigned
// and negative integers, byte and text strings, arrays, maps, false, true
// and null, definite lengths only, with the self-describe tag 55799
// skipped where it prefixes a value.

export const KIND_UINT: i32 = 0;
export const KIND_NINT: i32 = 1; // -1 - n
export const KIND_BYTES: i32 = 2;
export const KIND_TEXT: i32 = 3;
export const KIND_ARRAY: i32 = 4;
export const KIND_MAP: i32 = 5;
export const KIND_BOOL: i32 = 6;
export const KIND_NULL: i32 = 7;

// Val is a decoded CBOR value.
export class Val {
  kind: i32 = KIND_NULL;
  n: u64 = 0; // an integer's argument; a bool's 0 or 1
  s: string = "";
  b: Uint8Array = new Uint8Array(0);
  items: Val[] = []; // an array's items; a map's values
  keys: string[] = []; // a map's keys (text keys only)

  static uint(n: u64): Val { const v = new Val(); v.kind = KIND_UINT; v.n = n; return v; }
  static int(n: i64): Val {
    const v = new Val();
    if (n >= 0) { v.kind = KIND_UINT; v.n = <u64>n; } else { v.kind = KIND_NINT; v.n = <u64>(-1 - n); }
    return v;
  }
  static text(s: string): Val { const v = new Val(); v.kind = KIND_TEXT; v.s = s; return v; }
  static bytes(b: Uint8Array): Val { const v = new Val(); v.kind = KIND_BYTES; v.b = b; return v; }
  static bool(x: bool): Val { const v = new Val(); v.kind = KIND_BOOL; v.n = x ? 1 : 0; return v; }
  static nil(): Val { return new Val(); }
  static array(items: Val[]): Val { const v = new Val(); v.kind = KIND_ARRAY; v.items = items; return v; }
  static map(): Val { const v = new Val(); v.kind = KIND_MAP; return v; }

  // set adds or replaces a map entry; it returns the map.
  set(k: string, x: Val): Val {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == k) { this.items[i] = x; return this; }
    }
    this.keys.push(k);
    this.items.push(x);
    return this;
  }

  // get returns a map's entry, or null.
  get(k: string): Val | null {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == k) return this.items[i];
    }
    return null;
  }

  has(k: string): bool { return this.get(k) != null; }

  isNull(): bool { return this.kind == KIND_NULL; }

  // variant returns {"$tag": tag, "$value": x}, $value left out when x is null.
  static variant(tag: string, x: Val | null): Val {
    const v = Val.map().set("$tag", Val.text(tag));
    if (x != null) v.set("$value", x);
    return v;
  }

  // tag returns a variant's tag, or "" for a value that is not one.
  tag(): string {
    if (this.kind != KIND_MAP) return "";
    const t = this.get("$tag");
    if (t == null || t.kind != KIND_TEXT) return "";
    return t.s;
  }

  // payload returns a variant's $value, or null for a unit arm.
  payload(): Val {
    const x = this.get("$value");
    return x == null ? Val.nil() : x;
  }
}

// Reader decodes CBOR from memory.
export class Reader {
  ptr: usize;
  end: usize;
  err: string = "";

  constructor(ptr: usize, len: usize) { this.ptr = ptr; this.end = ptr + len; }

  fail(msg: string): void { if (this.err.length == 0) this.err = msg; }

  byte(): u8 {
    if (this.ptr >= this.end) { this.fail("unexpected end of CBOR"); return 0; }
    const b = load<u8>(this.ptr);
    this.ptr++;
    return b;
  }

  arg(info: u8): u64 {
    if (info < 24) return <u64>info;
    let size = 0;
    if (info == 24) size = 1;
    else if (info == 25) size = 2;
    else if (info == 26) size = 4;
    else if (info == 27) size = 8;
    else { this.fail("indefinite lengths are not supported"); return 0; }
    let n: u64 = 0;
    for (let i = 0; i < size; i++) n = (n << 8) | <u64>this.byte();
    return n;
  }

  value(depth: i32 = 0): Val {
    if (depth > 64) { this.fail("CBOR nested too deep"); return Val.nil(); }
    const ib = this.byte();
    const major = ib >> 5;
    const info = ib & 0x1f;
    if (major == 6) { // a tag: skip it, keep the value
      this.arg(info);
      return this.value(depth + 1);
    }
    if (major == 7) {
      if (info == 20) return Val.bool(false);
      if (info == 21) return Val.bool(true);
      if (info == 22) return Val.nil();
      this.fail("unsupported CBOR simple value or float");
      return Val.nil();
    }
    const n = this.arg(info);
    if (this.err.length > 0) return Val.nil();
    if (major == 0) return Val.uint(n);
    if (major == 1) { const v = new Val(); v.kind = KIND_NINT; v.n = n; return v; }
    if (major == 2 || major == 3) {
      if (n > <u64>(this.end - this.ptr)) { this.fail("string past the end of CBOR"); return Val.nil(); }
      const len = <i32>n;
      const p = this.ptr;
      this.ptr += <usize>len;
      if (major == 3) return Val.text(String.UTF8.decodeUnsafe(p, len));
      const b = new Uint8Array(len);
      memory.copy(b.dataStart, p, len);
      return Val.bytes(b);
    }
    if (n > <u64>(this.end - this.ptr)) { this.fail("collection past the end of CBOR"); return Val.nil(); }
    if (major == 4) {
      const items = new Array<Val>(0);
      for (let i: u64 = 0; i < n && this.err.length == 0; i++) items.push(this.value(depth + 1));
      return Val.array(items);
    }
    // major 5: a map with text keys
    const m = Val.map();
    for (let i: u64 = 0; i < n && this.err.length == 0; i++) {
      const k = this.value(depth + 1);
      if (k.kind != KIND_TEXT) { this.fail("a map key is not text"); break; }
      m.keys.push(k.s);
      m.items.push(this.value(depth + 1));
    }
    return m;
  }
}

// decode reads one value from bytes.
export function decode(b: Uint8Array): Val {
  const r = new Reader(b.dataStart, <usize>b.length);
  const v = r.value();
  if (r.err.length > 0) abort(r.err);
  return v;
}

// Writer encodes CBOR into a growing buffer.
export class Writer {
  buf: Uint8Array = new Uint8Array(256);
  len: i32 = 0;

  grow(n: i32): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const nb = new Uint8Array(size);
    memory.copy(nb.dataStart, this.buf.dataStart, this.len);
    this.buf = nb;
  }

  byte(b: u8): void { this.grow(1); this.buf[this.len++] = b; }

  head(major: u8, n: u64): void {
    const m = major << 5;
    if (n < 24) { this.byte(m | <u8>n); return; }
    let size = 8;
    let info: u8 = 27;
    if (n <= 0xff) { size = 1; info = 24; }
    else if (n <= 0xffff) { size = 2; info = 25; }
    else if (n <= 0xffffffff) { size = 4; info = 26; }
    this.byte(m | info);
    for (let i = size - 1; i >= 0; i--) this.byte(<u8>(n >> (<u64>(i * 8))));
  }

  raw(p: usize, n: i32): void {
    this.grow(n);
    memory.copy(this.buf.dataStart + <usize>this.len, p, n);
    this.len += n;
  }

  text(s: string): void {
    const b = String.UTF8.encode(s);
    this.head(3, <u64>b.byteLength);
    this.raw(changetype<usize>(b), b.byteLength);
  }

  bytes(b: Uint8Array): void {
    this.head(2, <u64>b.length);
    this.raw(b.dataStart, b.length);
  }

  value(v: Val): void {
    switch (v.kind) {
      case KIND_UINT: this.head(0, v.n); break;
      case KIND_NINT: this.head(1, v.n); break;
      case KIND_BYTES: this.bytes(v.b); break;
      case KIND_TEXT: this.text(v.s); break;
      case KIND_ARRAY:
        this.head(4, <u64>v.items.length);
        for (let i = 0; i < v.items.length; i++) this.value(v.items[i]);
        break;
      case KIND_MAP:
        this.head(5, <u64>v.keys.length);
        for (let i = 0; i < v.keys.length; i++) { this.text(v.keys[i]); this.value(v.items[i]); }
        break;
      case KIND_BOOL: this.byte(v.n != 0 ? 0xf5 : 0xf4); break;
      default: this.byte(0xf6);
    }
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.len);
    memory.copy(out.dataStart, this.buf.dataStart, this.len);
    return out;
  }
}

// encode returns the CBOR of v.
export function encode(v: Val): Uint8Array {
  const w = new Writer();
  w.value(v);
  return w.finish();
}

// Cursor reads CBOR in place, without building values: for reducers
// whose step must be quick (the counter). Each read checks the bounds and
// traps on malformed input.
export class Cursor {
  p: usize;
  end: usize;

  constructor(p: usize, len: usize) { this.p = p; this.end = p + len; }

  // head reads an item's major type (returned) and argument (this.n).
  n: u64 = 0;
  head(): u8 {
    if (this.p >= this.end) unreachable();
    const ib = load<u8>(this.p++);
    const info = ib & 0x1f;
    let n: u64 = <u64>info;
    if (info >= 24) {
      if (info > 27) unreachable();
      const size = <usize>1 << <usize>(info - 24);
      if (this.p + size > this.end) unreachable();
      n = 0;
      for (let i: usize = 0; i < size; i++) n = (n << 8) | <u64>load<u8>(this.p + i);
      this.p += size;
    }
    this.n = n;
    const major = ib >> 5;
    if (major == 6) return this.head(); // skip a tag
    return major;
  }

  // str reads a text or byte string; its bytes are at this.sp, this.n long.
  sp: usize = 0;
  str(): u8 {
    const major = this.head();
    if (major != 2 && major != 3) unreachable();
    if (this.n > <u64>(this.end - this.p)) unreachable();
    this.sp = this.p;
    this.p += <usize>this.n;
    return major;
  }

  // is reports whether the last string read is the ASCII text s.
  is(s: string): bool {
    if (<i32>this.n != s.length) return false;
    for (let i = 0; i < s.length; i++) {
      if (<i32>load<u8>(this.sp + <usize>i) != s.charCodeAt(i)) return false;
    }
    return true;
  }

  // skip skips one item.
  skip(): void {
    const major = this.head();
    if (major == 2 || major == 3) {
      if (this.n > <u64>(this.end - this.p)) unreachable();
      this.p += <usize>this.n;
    } else if (major == 4) {
      const n = this.n;
      for (let i: u64 = 0; i < n; i++) this.skip();
    } else if (major == 5) {
      const n = this.n;
      for (let i: u64 = 0; i < 2 * n; i++) this.skip();
    }
  }
}

// Out writes CBOR into a buffer it grows.
export class Out {
  p: usize;
  len: usize = 0;
  cap: usize;

  constructor(cap: usize) { this.p = heap.alloc(cap); this.cap = cap; }

  byte(b: u8): void {
    if (this.len == this.cap) {
      const np = heap.alloc(this.cap * 2);
      memory.copy(np, this.p, this.len);
      this.p = np;
      this.cap *= 2;
    }
    store<u8>(this.p + this.len++, b);
  }

  head(major: u8, n: u64): void {
    const m = major << 5;
    if (n < 24) { this.byte(m | <u8>n); return; }
    let size = 8;
    let info: u8 = 27;
    if (n <= 0xff) { size = 1; info = 24; }
    else if (n <= 0xffff) { size = 2; info = 25; }
    else if (n <= 0xffffffff) { size = 4; info = 26; }
    this.byte(m | info);
    for (let i = size - 1; i >= 0; i--) this.byte(<u8>(n >> (<u64>(i * 8))));
  }

  // ascii writes ASCII text.
  ascii(s: string): void {
    this.head(3, <u64>s.length);
    for (let i = 0; i < s.length; i++) this.byte(<u8>s.charCodeAt(i));
  }

  // raw writes bytes as they are.
  raw(p: usize, n: usize): void {
    for (let i: usize = 0; i < n; i++) this.byte(load<u8>(p + i));
  }
}

// trap is the modules' abort (asc --use abort=assembly/cbor/trap): a module
// imports nothing, so a failed step traps, and the host journals the step's
// error and keeps the old state.
export function trap(msg: string | null = null, file: string | null = null, line: u32 = 0, col: u32 = 0): void {
  unreachable();
}
