// Prints the bash tool's speed against just-bash and bashkit on the
// same script, measured in this one run on this machine:
//
//   cd bench/peers && npm ci && node ratios.mjs
//
// The Go figures come from `go test -bench 'BenchmarkScript/sandbox|BenchmarkFiles'`
// in tools/bash (run from the repository root); BenchmarkFiles/bash-c
// is the same file-heavy script under `bash -c` in a fresh directory.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { benchJustBash, benchJustBashFiles } from "./justbash.mjs";
import { benchBashkit } from "./bashkit.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function goBench() {
  const out = execFileSync("go", ["test", "./tools/bash/", "-run", "^$", "-bench", "Benchmark(Script|Files)$",
    "-benchtime", "2s", "-count", "3", "-cpu", "1"], { cwd: root, encoding: "utf8" });
  const pick = (name) => {
    const re = new RegExp(`${name}\\s+\\d+\\s+([\\d.]+) ns/op`, "g");
    const ms = [...out.matchAll(re)].map((m) => Number(m[1]) / 1e6);
    if (ms.length === 0) throw new Error(`no ${name} lines in:\n${out}`);
    return ms;
  };
  return { script: pick("BenchmarkScript/sandbox"), files: pick("BenchmarkFiles/sandbox"), filesBash: pick("BenchmarkFiles/bash-c") };
}

const fmt = (xs) => `${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)} ms`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const gb = goBench();
const go = gb.script;
const jb = await benchJustBash();
const bk = await benchBashkit();
const jbf = await benchJustBashFiles();
const g = median(go);
const gf = median(gb.files);
console.log(`script: 5 tool calls + 5 jq filters (tools/bash/bench_test.go)`);
console.log(`demiurge bash (Go, -cpu 1)        ${fmt(go)}`);
console.log(`just-bash 3.4.2, shared instance   ${fmt(jb.shared)}   ratio ${(median(jb.shared) / g).toFixed(1)}x`);
console.log(`just-bash 3.4.2, new instance      ${fmt(jb.fresh)}   ratio ${(median(jb.fresh) / g).toFixed(1)}x`);
console.log(`bashkit 0.18.2 ScriptedTool (napi) ${fmt(bk)}   ratio ${(median(bk) / g).toFixed(1)}x`);
console.log(`\nscript: 100 files written, grep -rn, awk, find | xargs wc -l (BenchmarkFiles)`);
console.log(`demiurge bash (Go, -cpu 1)        ${fmt(gb.files)}`);
console.log(`bash -c, fresh host directory      ${fmt(gb.filesBash)}   ratio ${(median(gb.filesBash) / gf).toFixed(1)}x`);
console.log(`just-bash 3.4.2, new instance      ${fmt(jbf)}   ratio ${(median(jbf) / gf).toFixed(1)}x`);
