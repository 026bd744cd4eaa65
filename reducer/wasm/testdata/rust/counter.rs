// The counter (examples/counter) as a Rust reducer module with AgentOS's
// reducer ABI v1, without the SDK or any crate: the benchmarks' Rust-shaped
// module (rustc's memory layout: a 1 MiB stack under __stack_pointer, data
// and a heap above it). Built with Debian's rustc and libstd-rust-dev-wasm32:
//
//   rustc --edition 2021 --crate-type cdylib --target wasm32-unknown-unknown \
//     -C opt-level=3 -C panic=abort -C strip=symbols -o counter.wasm counter.rs
//
// step returns a struct, which rustc's C ABI for wasm32 passes through a
// return pointer: the module exports step(ret, ptr, len).
#![no_std]

use core::panic::PanicInfo;

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

// A bump allocator over a static heap: the host resets the instance after
// each step, so nothing is ever freed.
static mut HEAP: [u8; 64 * 1024] = [0; 64 * 1024];
static mut TOP: usize = 0;

#[no_mangle]
pub extern "C" fn alloc(len: i32) -> i32 {
    unsafe {
        let p = TOP;
        let n = ((len.max(1) as usize) + 7) & !7;
        if p + n > HEAP.len() {
            core::arch::wasm32::unreachable();
        }
        TOP = p + n;
        HEAP.as_mut_ptr().add(p) as i32
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> u8 {
        let c = self.b[self.p];
        self.p += 1;
        c
    }
    // head reads an item's major type and argument (skipping tags).
    fn head(&mut self) -> (u8, u64) {
        let ib = self.byte();
        let info = ib & 0x1f;
        let n = match info {
            0..=23 => info as u64,
            24..=27 => {
                let mut n = 0u64;
                for _ in 0..(1usize << (info - 24)) {
                    n = (n << 8) | self.byte() as u64;
                }
                n
            }
            _ => core::arch::wasm32::unreachable(),
        };
        if ib >> 5 == 6 {
            return self.head();
        }
        (ib >> 5, n)
    }
    fn str(&mut self) -> &'a [u8] {
        let (m, n) = self.head();
        if m != 2 && m != 3 {
            core::arch::wasm32::unreachable();
        }
        let s = &self.b[self.p..self.p + n as usize];
        self.p += n as usize;
        s
    }
    fn skip(&mut self) {
        let (m, n) = self.head();
        match m {
            2 | 3 => self.p += n as usize,
            4 => (0..n).for_each(|_| self.skip()),
            5 => (0..2 * n).for_each(|_| self.skip()),
            _ => {}
        }
    }
    fn map(&mut self) -> u64 {
        let (m, n) = self.head();
        if m != 5 {
            core::arch::wasm32::unreachable();
        }
        n
    }
    fn uint(&mut self) -> u64 {
        let (m, n) = self.head();
        if m != 0 {
            core::arch::wasm32::unreachable();
        }
        n
    }
}

struct Out {
    p: *mut u8,
    len: usize,
}

impl Out {
    fn new(cap: usize) -> Out {
        Out { p: alloc(cap as i32) as *mut u8, len: 0 }
    }
    fn byte(&mut self, b: u8) {
        unsafe { *self.p.add(self.len) = b };
        self.len += 1;
    }
    fn head(&mut self, major: u8, n: u64) {
        let m = major << 5;
        if n < 24 {
            return self.byte(m | n as u8);
        }
        let (info, size) = if n <= 0xff { (24, 1) } else if n <= 0xffff { (25, 2) } else if n <= 0xffff_ffff { (26, 4) } else { (27, 8) };
        self.byte(m | info);
        for i in (0..size).rev() {
            self.byte((n >> (8 * i)) as u8);
        }
    }
    fn text(&mut self, s: &[u8]) {
        self.head(3, s.len() as u64);
        s.iter().for_each(|&c| self.byte(c));
    }
}

#[repr(C)]
pub struct Slice {
    ptr: i32,
    len: i32,
}

const PHASES: [&[u8]; 3] = [b"Idle", b"Counting", b"Done"];

#[no_mangle]
pub extern "C" fn step(ptr: i32, len: i32) -> Slice {
    let input = unsafe { core::slice::from_raw_parts(ptr as *const u8, len as usize) };
    let mut env = Cursor { b: input, p: 0 };
    let (mut state, mut event): (&[u8], &[u8]) = (&[], &[]);
    let mut version = 0;
    for _ in 0..env.map() {
        match env.str() {
            b"version" => version = env.uint(),
            b"state" => {
                if input[env.p] == 0xf6 {
                    env.p += 1;
                } else {
                    state = env.str();
                }
            }
            b"event" => {
                for _ in 0..env.map() {
                    if env.str() == b"value" {
                        event = env.str();
                    } else {
                        env.skip();
                    }
                }
            }
            _ => env.skip(),
        }
    }
    if version != 1 || event.is_empty() {
        core::arch::wasm32::unreachable();
    }
    let (mut pc, mut remaining) = (0usize, 0u64);
    if !state.is_empty() {
        let mut s = Cursor { b: state, p: 0 };
        for _ in 0..s.map() {
            match s.str() {
                b"pc" => {
                    for _ in 0..s.map() {
                        if s.str() == b"$tag" {
                            let t = s.str();
                            pc = PHASES.iter().position(|&p| p == t).unwrap_or_else(|| core::arch::wasm32::unreachable());
                        } else {
                            s.skip();
                        }
                    }
                }
                b"remaining" => remaining = s.uint(),
                _ => s.skip(),
            }
        }
    }
    let mut e = Cursor { b: event, p: 0 };
    let (mut tag, mut target): (&[u8], u64) = (&[], 0);
    for _ in 0..e.map() {
        match e.str() {
            b"$tag" => tag = e.str(),
            b"$value" => {
                for _ in 0..e.map() {
                    if e.str() == b"target" {
                        target = e.uint();
                    } else {
                        e.skip();
                    }
                }
            }
            _ => e.skip(),
        }
    }
    match tag {
        b"Start" => {
            remaining = target;
            pc = if target == 0 { 2 } else { 1 };
        }
        b"Tick" => {
            if pc == 1 && remaining > 0 {
                remaining -= 1;
                if remaining == 0 {
                    pc = 2;
                }
            }
        }
        _ => core::arch::wasm32::unreachable(),
    }
    let mut st = Out::new(48);
    st.head(5, 2);
    st.text(b"pc");
    st.head(5, 1);
    st.text(b"$tag");
    st.text(PHASES[pc]);
    st.text(b"remaining");
    st.head(0, remaining);
    let mut out = Out::new(96);
    out.head(5, 4);
    out.text(b"state");
    out.head(2, st.len as u64);
    (0..st.len).for_each(|i| out.byte(unsafe { *st.p.add(i) }));
    out.text(b"domain_events");
    out.head(4, 0);
    out.text(b"effects");
    out.head(4, 0);
    out.text(b"ann");
    out.byte(0xf6);
    Slice { ptr: out.p as i32, len: out.len as i32 }
}
