// The reducer of AgentOS's 01-hello-timer, demo/TimerSM@1, in AssemblyScript,
// for AgentOS's own AIR of that example (its state demo/TimerState@1: pc
// Idle|Awaiting|Done|TimedOut, key, deadline_ns, fired_key). Start{deliver_at_ns,
// key} sets a timer (timer.set) and waits in Awaiting; the timer's receipt,
// sys/TimerFired@1 as the Fired arm, ends it Done with fired_key, the key of
// the receipt. A Start while Awaiting, or a receipt of another timer, leaves
// the state as it is. (timer.ts is the same reducer for examples/timer's own
// schemas, which add fired_at_ns, error and a Failed arm.)
import { serve, Step, Val } from "./abi";

export { alloc, step } from "./abi";

function opt(v: Val | null): Val { return v == null ? Val.nil() : v; }

function sameText(a: Val | null, b: Val | null): bool {
  const an = a == null || a.isNull();
  const bn = b == null || b.isNull();
  if (an || bn) return an == bn;
  return a!.s == b!.s;
}

function helloTimer(s: Step): void {
  const st = Val.map()
    .set("pc", Val.variant("Idle", null)).set("key", Val.nil())
    .set("deadline_ns", Val.nil()).set("fired_key", Val.nil());
  const old = s.state;
  if (old != null) {
    for (let i = 0; i < old.keys.length; i++) st.set(old.keys[i], old.items[i]);
  }
  const pc = st.get("pc")!.tag();
  const tag = s.event.tag();
  const ev = s.event.payload();
  if (tag == "Start") {
    if (pc == "Awaiting") { s.out = s.state; return; }
    const at = ev.get("deliver_at_ns")!;
    const key = opt(ev.get("key"));
    st.set("pc", Val.variant("Awaiting", null)).set("key", key)
      .set("deadline_ns", at).set("fired_key", Val.nil());
    s.effect("timer.set", Val.map().set("deliver_at_ns", at).set("key", key));
  } else if (tag == "Fired") {
    const req = ev.get("requested")!;
    const deadline = st.get("deadline_ns")!;
    if (pc != "Awaiting" || deadline.isNull() || req.get("deliver_at_ns")!.n != deadline.n || !sameText(req.get("key"), st.get("key"))) {
      s.out = s.state;
      return;
    }
    st.set("pc", Val.variant("Done", null));
    st.set("fired_key", opt(ev.get("receipt")!.get("key")));
  } else {
    abort("unknown event");
  }
  s.out = st;
}

serve(helloTimer);
