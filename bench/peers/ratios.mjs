// Prints the scripted tool's speed against just-bash and bashkit on the
// same script, measured in this one run on this machine:
//
//   cd bench/peers && npm ci && node ratios.mjs
//
// The Go figure comes from `go test -bench BenchmarkScript/sandbox` in
// tools/scripted (run from the repository root).
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { benchJustBash } from "./justbash.mjs";
import { benchBashkit } from "./bashkit.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function goBench() {
  const out = execFileSync("go", ["test", "./tools/scripted/", "-run", "^$", "-bench", "BenchmarkScript/sandbox",
    "-benchtime", "2s", "-count", "3", "-cpu", "1"], { cwd: root, encoding: "utf8" });
  const ms = [...out.matchAll(/BenchmarkScript\/sandbox\s+\d+\s+([\d.]+) ns\/op/g)].map((m) => Number(m[1]) / 1e6);
  if (ms.length === 0) throw new Error(`no benchmark lines in:\n${out}`);
  return ms;
}

const fmt = (xs) => `${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)} ms`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const go = goBench();
const jb = await benchJustBash();
const bk = await benchBashkit();
const g = median(go);
console.log(`script: 5 tool calls + 5 jq filters (tools/scripted/bench_test.go)`);
console.log(`demiurge scripted (Go, -cpu 1)    ${fmt(go)}`);
console.log(`just-bash 3.4.2, shared instance   ${fmt(jb.shared)}   ratio ${(median(jb.shared) / g).toFixed(1)}x`);
console.log(`just-bash 3.4.2, new instance      ${fmt(jb.fresh)}   ratio ${(median(jb.fresh) / g).toFixed(1)}x`);
console.log(`bashkit 0.18.2 ScriptedTool (napi) ${fmt(bk)}   ratio ${(median(bk) / g).toFixed(1)}x`);
