// The retry of examples/retry in AssemblyScript: Start asks for work
// (retry/WorkRequested@1, which the plan runs), Ok ends it Done, a
// transient Err (or a failed plan) backs off with timer.set and asks
// again when the timer fires, until max_attempts. It derives the same
// records as the Go reducer (examples/retry); the module declares a
// context, for the logical time a Start without now_ns anchors at.
import { serve, Step, Val } from "./abi";
import { decode } from "./cbor";

export { alloc, step } from "./abi";

const PLAN = "retry/work_plan@1";
const MAX: u64 = 0xffffffffffffffff;

function mulSat(a: u64, b: u64): u64 {
  if (a != 0 && b > MAX / a) return MAX;
  return a * b;
}

function backoffNs(baseMs: u64, attempt: u64): u64 {
  const shift = attempt - 1 < 63 ? attempt - 1 : 63;
  return mulSat(mulSat(baseMs, (<u64>1) << shift), 1000000);
}

class Retry {
  st: Val;
  s: Step;
  constructor(s: Step, st: Val) { this.s = s; this.st = st; }

  pc(): string { return this.st.get("pc")!.tag(); }
  n(k: string): u64 { return this.st.get(k)!.n; }

  attempting(reqId: string, attempt: u64): bool {
    return this.pc() == "Working" && this.st.get("req_id")!.s == reqId && this.n("attempt") == attempt;
  }

  request(): void {
    this.s.emit("retry/WorkRequested@1", Val.map()
      .set("req_id", this.st.get("req_id")!).set("url", this.st.get("url")!).set("attempt", Val.uint(this.n("attempt"))));
  }

  failed(why: string, transient: bool): void {
    this.st.set("last_error", Val.text(why));
    if (!transient || this.n("attempt") >= this.n("max_attempts")) {
      this.st.set("pc", Val.variant("Failed", null));
      return;
    }
    const anchor = this.n("anchor_ns");
    const b = backoffNs(this.n("base_delay_ms"), this.n("attempt"));
    const at = anchor + (b < MAX - anchor ? b : MAX - anchor);
    this.s.effect("timer.set", Val.map().set("deliver_at_ns", Val.uint(at)).set("key", this.st.get("req_id")!));
    this.st.set("pc", Val.variant("BackingOff", null));
    this.st.get("timers")!.items.push(Val.uint(at));
  }
}

function isSet(v: Val | null): bool { return v != null && !v.isNull(); }

function retry(s: Step): void {
  let st = Val.map()
    .set("pc", Val.variant("Idle", null)).set("req_id", Val.text("")).set("url", Val.text(""))
    .set("attempt", Val.uint(0)).set("max_attempts", Val.uint(0)).set("base_delay_ms", Val.uint(0))
    .set("anchor_ns", Val.uint(0)).set("timers", Val.array([])).set("last_status", Val.nil()).set("last_error", Val.nil());
  const old = s.state;
  if (old != null) {
    for (let i = 0; i < old.keys.length; i++) st.set(old.keys[i], old.items[i]);
  }
  let r = new Retry(s, st);
  const tag = s.event.tag();
  const ev = s.event.payload();
  if (tag == "Start") {
    if (r.pc() == "Working" || r.pc() == "BackingOff") { s.out = s.state; return; }
    const now = ev.get("now_ns");
    const anchor = isSet(now) ? now!.n : s.logicalNowNs;
    const maxAttempts = ev.get("max_attempts")!.n;
    const base = ev.get("base_delay_ms")!.n;
    st = Val.map()
      .set("pc", Val.variant("Working", null)).set("req_id", ev.get("req_id")!).set("url", ev.get("url")!)
      .set("attempt", Val.uint(1)).set("max_attempts", Val.uint(maxAttempts > 1 ? maxAttempts : 1))
      .set("base_delay_ms", Val.uint(base > 1 ? base : 1)).set("anchor_ns", Val.uint(anchor))
      .set("timers", Val.array([])).set("last_status", Val.nil()).set("last_error", Val.nil());
    r = new Retry(s, st);
    r.request();
  } else if (tag == "Ok") {
    if (!r.attempting(ev.get("req_id")!.s, ev.get("attempt")!.n)) { s.out = s.state; return; }
    st.set("pc", Val.variant("Done", null)).set("last_status", ev.get("status")!).set("last_error", Val.nil());
  } else if (tag == "Err") {
    if (!r.attempting(ev.get("req_id")!.s, ev.get("attempt")!.n)) { s.out = s.state; return; }
    const status = ev.get("status");
    st.set("last_status", status == null ? Val.nil() : status);
    r.failed(ev.get("message")!.s, ev.get("transient")!.n != 0);
  } else if (tag == "PlanEnded") {
    const status = ev.get("status")!.s;
    if (ev.get("plan")!.s != PLAN || status == "ok") { s.out = s.state; return; }
    const req = decode(ev.get("input")!.b);
    const reqId = req.get("req_id");
    const attempt = req.get("attempt");
    if (reqId == null || attempt == null || !r.attempting(reqId.s, attempt.n)) { s.out = s.state; return; }
    let reason = PLAN + ' ended with status "' + status + '"';
    const err = ev.get("error");
    if (isSet(err)) {
      reason = PLAN + " step " + err!.get("step")!.s + ": " + err!.get("code")!.s + ": " + err!.get("message")!.s;
    }
    st.set("last_status", Val.nil());
    r.failed(reason, true);
  } else if (tag == "Timer") {
    const req = ev.get("requested")!;
    const timers = st.get("timers")!.items;
    const key = req.get("key");
    if (r.pc() != "BackingOff" || timers.length == 0 || req.get("deliver_at_ns")!.n != timers[timers.length - 1].n ||
      !isSet(key) || key!.s != st.get("req_id")!.s) {
      s.out = s.state;
      return;
    }
    const status = ev.get("status")!.s;
    if (status != "ok") {
      st.set("pc", Val.variant("Failed", null));
      st.set("last_error", Val.text('the backoff timer ended with status "' + status + '"'));
    } else {
      st.set("pc", Val.variant("Working", null));
      st.set("attempt", Val.uint(r.n("attempt") + 1));
      r.request();
    }
  } else {
    abort("unknown event");
  }
  s.out = st;
}

serve(retry);
