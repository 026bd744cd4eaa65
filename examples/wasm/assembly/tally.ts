// A tally of a chat's events, in AssemblyScript: routed the agent's
// demiurge/ChatEvent@2 (examples/wasm/tally), it counts every event, the
// user's messages among them, and keeps the kind of the last one. It is a
// WASM reducer beside the Go chat reducer in the same world.
import { serve, Step, Val } from "./abi";

export { alloc, step } from "./abi";

function tally(s: Step): void {
  let events: u64 = 0;
  let user: u64 = 0;
  const old = s.state;
  if (old != null) {
    events = old.get("events")!.n;
    user = old.get("user_messages")!.n;
  }
  const kind = s.event.tag();
  events++;
  if (kind == "User") user++;
  s.out = Val.map().set("events", Val.uint(events)).set("user_messages", Val.uint(user)).set("last", Val.text(kind));
}

serve(tally);
