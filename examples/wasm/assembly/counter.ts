// The counter of examples/counter in AssemblyScript: Start{target} sets a
// countdown, each Tick counts it down, at zero the counter is Done. It
// derives the same records as the Go reducer (examples/counter).
//
// The counter is the reducer the benchmarks step (reducer/wasm, "go test
// -bench Step"), so it reads its envelope, state and event in place
// (Cursor) and writes its output straight into memory, rather than
// through the values the timer and the retry build (Val).
import { Cursor, Out } from "./cbor";

const IDLE: i32 = 0;
const COUNTING: i32 = 1;
const DONE: i32 = 2;

export function alloc(len: i32): i32 {
  const n: i32 = len > 0 ? len : 1;
  return <i32>heap.alloc(<usize>n);
}

// phase reads a variant {"$tag": "Idle"|"Counting"|"Done"}.
function phase(c: Cursor): i32 {
  if (c.head() != 5) unreachable();
  const n = c.n;
  let pc = -1;
  for (let i: u64 = 0; i < n; i++) {
    c.str();
    if (c.is("$tag")) {
      c.str();
      if (c.is("Idle")) pc = IDLE;
      else if (c.is("Counting")) pc = COUNTING;
      else if (c.is("Done")) pc = DONE;
    } else {
      c.skip();
    }
  }
  if (pc < 0) unreachable();
  return pc;
}

export function step(ret: i32, ptr: i32, len: i32): void {
  // The envelope: {version, state, event {schema, value, key?}, ctx?}.
  const env = new Cursor(<usize>ptr, <usize>len);
  if (env.head() != 5) unreachable();
  const entries = env.n;
  let stateP: usize = 0, stateN: usize = 0, eventP: usize = 0, eventN: usize = 0;
  let version: u64 = 0;
  for (let i: u64 = 0; i < entries; i++) {
    env.str();
    if (env.is("version")) {
      if (env.head() != 0) unreachable();
      version = env.n;
    } else if (env.is("state")) {
      if (env.p < env.end && load<u8>(env.p) == 0xf6) { env.p++; continue; }
      env.str();
      stateP = env.sp; stateN = <usize>env.n;
    } else if (env.is("event")) {
      if (env.head() != 5) unreachable();
      const m = env.n;
      for (let j: u64 = 0; j < m; j++) {
        env.str();
        if (env.is("value")) { env.str(); eventP = env.sp; eventN = <usize>env.n; }
        else env.skip();
      }
    } else {
      env.skip();
    }
  }
  if (version != 1 || eventP == 0) unreachable();

  // The state {pc, remaining}, or a new counter.
  let pc = IDLE;
  let remaining: u64 = 0;
  if (stateP != 0) {
    const s = new Cursor(stateP, stateN);
    if (s.head() != 5) unreachable();
    const n = s.n;
    for (let i: u64 = 0; i < n; i++) {
      s.str();
      if (s.is("pc")) pc = phase(s);
      else if (s.is("remaining")) { if (s.head() != 0) unreachable(); remaining = s.n; }
      else s.skip();
    }
  }

  // The event: {"$tag": "Start", "$value": {target}} or {"$tag": "Tick"}.
  const e = new Cursor(eventP, eventN);
  if (e.head() != 5) unreachable();
  const n = e.n;
  let start = false, tick = false;
  let target: u64 = 0;
  for (let i: u64 = 0; i < n; i++) {
    e.str();
    if (e.is("$tag")) {
      e.str();
      start = e.is("Start");
      tick = e.is("Tick");
    } else if (e.is("$value")) {
      if (e.head() != 5) unreachable();
      const m = e.n;
      for (let j: u64 = 0; j < m; j++) {
        e.str();
        if (e.is("target")) { if (e.head() != 0) unreachable(); target = e.n; }
        else e.skip();
      }
    } else {
      e.skip();
    }
  }
  if (start) {
    remaining = target;
    pc = target == 0 ? DONE : COUNTING;
  } else if (tick) {
    if (pc == COUNTING && remaining > 0) {
      remaining--;
      if (remaining == 0) pc = DONE;
    }
  } else {
    unreachable();
  }

  // The new state, then the output envelope around it.
  const st = new Out(32);
  st.head(5, 2);
  st.ascii("pc");
  st.head(5, 1);
  st.ascii("$tag");
  st.ascii(pc == IDLE ? "Idle" : pc == COUNTING ? "Counting" : "Done");
  st.ascii("remaining");
  st.head(0, remaining);
  const out = new Out(64);
  out.head(5, 4);
  out.ascii("state");
  out.head(2, <u64>st.len);
  out.raw(st.p, st.len);
  out.ascii("domain_events");
  out.head(4, 0);
  out.ascii("effects");
  out.head(4, 0);
  out.ascii("ann");
  out.byte(0xf6);
  store<i32>(<usize>ret, <i32>out.p);
  store<i32>(<usize>ret, <i32>out.len, 4);
}
