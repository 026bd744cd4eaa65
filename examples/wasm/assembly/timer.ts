// The timer of examples/timer in AssemblyScript: Start{deliver_at_ns, key}
// sets a timer (timer.set) and waits; the timer's receipt, sys/TimerFired@1
// as the Fired arm, ends it Done (or Failed). It derives the same records as
// the Go reducer (examples/timer).
import { serve, Step, Val } from "./abi";

export { alloc, step } from "./abi";

function sameText(a: Val | null, b: Val | null): bool {
  const an = a == null || a.isNull();
  const bn = b == null || b.isNull();
  if (an || bn) return an == bn;
  return a!.s == b!.s;
}

function opt(v: Val | null): Val { return v == null ? Val.nil() : v; }

function timer(s: Step): void {
  let st = Val.map()
    .set("pc", Val.variant("Idle", null)).set("key", Val.nil()).set("deadline_ns", Val.nil())
    .set("fired_key", Val.nil()).set("fired_at_ns", Val.nil()).set("error", Val.nil());
  const old = s.state;
  if (old != null) {
    for (let i = 0; i < old.keys.length; i++) st.set(old.keys[i], old.items[i]);
  }
  const pc = st.get("pc")!.tag();
  const tag = s.event.tag();
  const ev = s.event.payload();
  if (tag == "Start") {
    if (pc == "Waiting") { s.out = s.state; return; }
    const at = ev.get("deliver_at_ns")!;
    const key = opt(ev.get("key"));
    st = Val.map()
      .set("pc", Val.variant("Waiting", null)).set("key", key).set("deadline_ns", at)
      .set("fired_key", Val.nil()).set("fired_at_ns", Val.nil()).set("error", Val.nil());
    s.effect("timer.set", Val.map().set("deliver_at_ns", at).set("key", key));
  } else if (tag == "Fired") {
    const req = ev.get("requested")!;
    const deadline = st.get("deadline_ns")!;
    if (pc != "Waiting" || deadline.isNull() || req.get("deliver_at_ns")!.n != deadline.n || !sameText(req.get("key"), st.get("key"))) {
      s.out = s.state;
      return;
    }
    const status = ev.get("status")!.s;
    if (status != "ok") {
      st.set("pc", Val.variant("Failed", null));
      st.set("error", Val.text('timer.set ended with status "' + status + '"'));
    } else {
      const receipt = ev.get("receipt")!;
      st.set("pc", Val.variant("Done", null));
      st.set("fired_key", opt(receipt.get("key")));
      st.set("fired_at_ns", receipt.get("delivered_at_ns")!);
    }
  } else {
    abort("unknown event");
  }
  s.out = st;
}

serve(timer);
