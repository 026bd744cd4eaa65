// The reducer of AgentOS's 08-retry-backoff, demo/RetrySM@1, in
// AssemblyScript, for AgentOS's own AIR of that example (its state
// demo/RetryState@1: pc as text, attempt, max_attempts, base_delay_ms,
// anchor_ns, payload, req_id; its event demo/RetryEvent@1 with the arms
// start, ok, err, timer). start asks for the work (demo/WorkRequested@1,
// which the manifest's plan runs); ok ends it Done; a transient err backs
// off with timer.set at anchor_ns + base_delay_ms·2^(attempt-1) and asks
// again when the timer fires, until max_attempts, then Failed. (retry.ts is
// the reducer of examples/retry's own schemas, which keep more.)
import { serve, Step, Val } from "./abi";

export { alloc, step } from "./abi";

const MAX: u64 = 0xffffffffffffffff;

function mulSat(a: u64, b: u64): u64 {
  if (a != 0 && b > MAX / a) return MAX;
  return a * b;
}

function atLeastOne(n: u64): u64 { return n > 1 ? n : 1; }

function requestWork(s: Step, st: Val): void {
  s.emit("demo/WorkRequested@1", Val.map().set("req_id", st.get("req_id")!).set("payload", st.get("payload")!));
}

function retryBackoff(s: Step): void {
  const st = Val.map()
    .set("pc", Val.text("Idle")).set("attempt", Val.uint(0)).set("max_attempts", Val.uint(0))
    .set("base_delay_ms", Val.uint(0)).set("anchor_ns", Val.uint(0))
    .set("payload", Val.text("")).set("req_id", Val.text(""));
  const old = s.state;
  if (old != null) {
    for (let i = 0; i < old.keys.length; i++) st.set(old.keys[i], old.items[i]);
  }
  const pc = st.get("pc")!.s;
  const tag = s.event.tag();
  const ev = s.event.payload();
  if (tag == "start") {
    st.set("pc", Val.text("Waiting")).set("attempt", Val.uint(1))
      .set("max_attempts", Val.uint(atLeastOne(ev.get("max_attempts")!.n)))
      .set("base_delay_ms", Val.uint(atLeastOne(ev.get("base_delay_ms")!.n)))
      .set("anchor_ns", ev.get("now_ns")!).set("payload", ev.get("payload")!).set("req_id", ev.get("req_id")!);
    requestWork(s, st);
  } else if (tag == "ok") {
    if (st.get("req_id")!.s.length == 0) { s.out = s.state; return; }
    st.set("pc", Val.text("Done"));
  } else if (tag == "err") {
    if (pc != "Waiting" || ev.get("req_id")!.s != st.get("req_id")!.s) { s.out = s.state; return; }
    const attempt = st.get("attempt")!.n;
    const maxAttempts = st.get("max_attempts")!.n;
    if (ev.get("transient")!.n != 0 && attempt < maxAttempts) {
      const shift = attempt - 1 < 63 ? attempt - 1 : 63;
      const delayNs = mulSat(mulSat(st.get("base_delay_ms")!.n, (<u64>1) << shift), 1000000);
      const anchor = st.get("anchor_ns")!.n;
      const at = delayNs > MAX - anchor ? MAX : anchor + delayNs;
      s.effect("timer.set", Val.map().set("deliver_at_ns", Val.uint(at)).set("key", st.get("req_id")!));
      st.set("attempt", Val.uint(attempt + 1));
    } else {
      st.set("pc", Val.text("Failed"));
    }
  } else if (tag == "timer") {
    if (pc != "Waiting") { s.out = s.state; return; }
    requestWork(s, st);
  } else {
    abort("unknown event");
  }
  s.out = st;
}

serve(retryBackoff);
