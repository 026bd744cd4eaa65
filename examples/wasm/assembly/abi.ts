// AgentOS's reducer ABI v1 for AssemblyScript: the module exports memory,
// alloc(len) -> ptr and step(ret, ptr, len), which decodes the input
// envelope {version, state, event {schema, value, key?}, ctx?}, runs the
// reducer given to serve, and writes (ptr, len) of the output envelope
// {state, domain_events, effects, ann} at ret. The host resets the
// instance after each step, so the stub runtime's bump allocator never
// needs to free anything.
import { Val, Reader, Writer, decode, encode, KIND_BYTES, KIND_MAP, KIND_UINT } from "./cbor";

export { Val } from "./cbor";

// Step is one step: what the reducer gets and what it returns.
export class Step {
  // The cell's state, or null for a new cell.
  state: Val | null = null;
  event: Val = Val.nil();
  eventSchema: string = "";
  // The cell key, or null when the reducer is not keyed.
  key: Val | null = null;
  // From the context, when the module declares one (else 0).
  logicalNowNs: u64 = 0;
  nowNs: u64 = 0;

  // The new state; null deletes the cell.
  out: Val | null = null;
  events: Val[] = [];
  effects: Val[] = [];

  // emit raises a domain event.
  emit(schema: string, value: Val): void {
    this.events.push(Val.map().set("schema", Val.text(schema)).set("value", Val.bytes(encode(value))));
  }

  // effect emits a micro-effect (timer.set, blob.put, blob.get).
  effect(kind: string, params: Val): void {
    this.effects.push(Val.map().set("kind", Val.text(kind)).set("params_cbor", Val.bytes(encode(params))));
  }
}

let reducer: (s: Step) => void = (s: Step): void => { unreachable(); };

// serve sets the reducer the module runs.
export function serve(r: (s: Step) => void): void { reducer = r; }

export function alloc(len: i32): i32 {
  const n: i32 = len > 0 ? len : 1;
  return <i32>heap.alloc(<usize>n);
}

export function step(ret: i32, ptr: i32, len: i32): void {
  const r = new Reader(<usize>ptr, <usize>len);
  const env = r.value();
  if (r.err.length > 0 || env.kind != KIND_MAP) abort("input envelope: " + r.err);
  const version = env.get("version");
  if (version == null || version.kind != KIND_UINT || version.n != 1) abort("ABI version is not 1");
  const s = new Step();
  const state = env.get("state");
  if (state != null && state.kind == KIND_BYTES) s.state = decode(state.b);
  const ev = env.get("event");
  if (ev == null) abort("no event");
  const evs = ev!.get("schema");
  if (evs != null) s.eventSchema = evs.s;
  const value = ev!.get("value");
  if (value == null || value.kind != KIND_BYTES) abort("no event value");
  s.event = decode(value!.b);
  const key = ev!.get("key");
  if (key != null && key.kind == KIND_BYTES) s.key = decode(key.b);
  const ctx = env.get("ctx");
  if (ctx != null && ctx.kind == KIND_BYTES) {
    const c = decode(ctx.b);
    const ln = c.get("logical_now_ns");
    if (ln != null) s.logicalNowNs = ln.n;
    const n = c.get("now_ns");
    if (n != null) s.nowNs = n.n;
  }
  reducer(s);
  const w = new Writer();
  w.head(5, 4);
  w.text("state");
  const st = s.out;
  if (st == null) w.byte(0xf6);
  else w.bytes(encode(st));
  w.text("domain_events");
  w.value(Val.array(s.events));
  w.text("effects");
  w.value(Val.array(s.effects));
  w.text("ann");
  w.byte(0xf6);
  const out = w.finish();
  store<i32>(<usize>ret, <i32>out.dataStart);
  store<i32>(<usize>ret, out.length, 4);
}
