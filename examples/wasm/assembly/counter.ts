// The counter of examples/counter in AssemblyScript: Start{target} sets a
// countdown, each Tick counts it down, at zero the counter is Done. It
// derives the same records as the Go reducer (examples/counter).
import { serve, Step, Val } from "./abi";

export { alloc, step } from "./abi";

function counter(s: Step): void {
  let pc = "Idle";
  let remaining: u64 = 0;
  const st = s.state;
  if (st != null) {
    pc = st.get("pc")!.tag();
    remaining = st.get("remaining")!.n;
  }
  const tag = s.event.tag();
  if (tag == "Start") {
    remaining = s.event.payload().get("target")!.n;
    pc = remaining == 0 ? "Done" : "Counting";
  } else if (tag == "Tick") {
    if (pc == "Counting" && remaining > 0) {
      remaining--;
      if (remaining == 0) pc = "Done";
    }
  } else {
    abort("unknown event");
  }
  s.out = Val.map().set("pc", Val.variant(pc, null)).set("remaining", Val.uint(remaining));
}

serve(counter);
