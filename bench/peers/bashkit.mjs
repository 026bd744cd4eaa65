// Runs the benchmark script on bashkit's ScriptedTool through its Node
// binding (callbacks hop through the event loop).
import { ScriptedTool } from "@everruns/bashkit";
import { SCRIPT, getUser, listOrders, time } from "./common.mjs";

export async function benchBashkit(opts) {
  const tool = new ScriptedTool({ name: "bench" });
  tool.addTool("get_user", "Fetch user by ID", (params) => getUser(params.id),
    { type: "object", properties: { id: { type: "integer" } }, required: ["id"] });
  tool.addTool("list_orders", "List orders", () => listOrders(),
    { type: "object", properties: { user_id: { type: "integer" } }, required: ["user_id"] });
  tool.env("USER_ID", "1");
  return time(async () => (await tool.execute(SCRIPT)).stdout, opts);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchBashkit();
  console.log(`bashkit ScriptedTool (napi): ${r.map((x) => x.toFixed(2)).join(", ")} ms/run`);
}
