// Builds each example's reducer module and writes it beside the example's
// manifest as modules/<module name>-<sha256 hex>.wasm (AgentOS's layout),
// removing the module it replaces. Run: npm ci && npm run build.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = [
  { source: "assembly/counter.ts", example: "counter", name: "counter/Counter@1" },
  { source: "assembly/timer.ts", example: "timer", name: "timer/Timer@1" },
  { source: "assembly/retry.ts", example: "retry", name: "retry/Retry@1" },
  // For AgentOS's own 00-counter manifest (not in the repository), which
  // names the counter demo/CounterSM@1.
  { source: "assembly/counter.ts", example: "wasm/00-counter", name: "demo/CounterSM@1" },
  // The reducer of AgentOS's own 01-hello-timer manifest (wasm/01-hello-timer/README.md).
  { source: "assembly/hello_timer.ts", example: "wasm/01-hello-timer", name: "demo/TimerSM@1" },
  // The reducer of AgentOS's own 08-retry-backoff manifest (wasm/08-retry-backoff/README.md).
  { source: "assembly/retry_backoff.ts", example: "wasm/08-retry-backoff", name: "demo/RetrySM@1" },
  // A tally of the agent's chat events, added to the agent's world (wasm/tally/README.md).
  { source: "assembly/tally.ts", example: "wasm/tally", name: "demo/Tally@1" },
];
const only = process.argv[2]; // an output directory: build there, for the test that checks the committed modules
for (const m of modules) {
  const tmp = join(only ?? join(here, "build"), "tmp", m.example + ".wasm");
  mkdirSync(dirname(tmp), { recursive: true });
  execFileSync(join(here, "node_modules", ".bin", "asc"), [
    join(here, m.source), "-o", tmp,
    "--runtime", "stub", "-O3", "--noAssert", "--use", "abort=assembly/cbor/trap",
  ], { cwd: here, stdio: "inherit" });
  const code = readFileSync(tmp);
  const hex = createHash("sha256").update(code).digest("hex");
  const root = only ? join(only, m.example) : join(here, "..", m.example);
  const dir = join(root, "modules", dirname(m.name));
  mkdirSync(dir, { recursive: true });
  const base = m.name.slice(m.name.lastIndexOf("/") + 1);
  for (const f of readdirSync(dir)) {
    if (f.startsWith(base + "-") && f.endsWith(".wasm")) rmSync(join(dir, f));
  }
  writeFileSync(join(dir, `${base}-${hex}.wasm`), code);
  console.log(`${m.name}: ${join(dir, `${base}-${hex}.wasm`)} (${code.length} bytes)`);
}
