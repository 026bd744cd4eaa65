// Runs the benchmark script on just-bash: one shared Bash instance, and a
// new instance per run (what bashkit's bench runner does).
import { Bash, defineCommand } from "just-bash";
import { SCRIPT, FILES_SCRIPT, FILES_WANT, getUser, listOrders, time, flagValue } from "./common.mjs";

const commands = () => [
  defineCommand("get_user", async (args) => ({ stdout: getUser(flagValue(args, "id")), stderr: "", exitCode: 0 })),
  defineCommand("list_orders", async () => ({ stdout: listOrders(), stderr: "", exitCode: 0 })),
];
const options = () => ({ customCommands: commands(), env: { USER_ID: "1" } });

export async function benchJustBash(opts) {
  const shared = new Bash(options());
  const sharedMs = await time(async () => (await shared.exec(SCRIPT)).stdout, opts);
  const freshMs = await time(async () => (await new Bash(options()).exec(SCRIPT)).stdout, opts);
  return { shared: sharedMs, fresh: freshMs };
}

// benchJustBashFiles runs the file-heavy script on a new Bash per run (its
// in-memory file system starts empty, as the sandbox's does).
export async function benchJustBashFiles(opts) {
  return time(async () => (await new Bash(options()).exec(FILES_SCRIPT)).stdout,
    { iterations: 20, warmup: 5, ...opts, want: FILES_WANT });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchJustBash();
  console.log(`just-bash shared instance: ${r.shared.map((x) => x.toFixed(2)).join(", ")} ms/run`);
  console.log(`just-bash new instance:    ${r.fresh.map((x) => x.toFixed(2)).join(", ")} ms/run`);
  const f = await benchJustBashFiles();
  console.log(`just-bash files script:    ${f.map((x) => x.toFixed(2)).join(", ")} ms/run`);
}
