// The script of tools/bash/bench_test.go (5 tool calls, 5 jq filters)
// and a timer shared by the peer runners.
export const SCRIPT = `for id in 1 2 3; do get_user --id $id | jq -r .name; done
total=$(list_orders --user_id $USER_ID | jq '[.[].total] | add'); echo "total=$total"
get_user --id 9 | jq -c '{id}'`;

export const WANT = 'user1\nuser2\nuser3\ntotal=6.5\n{"id":9}\n';

// FILES_SCRIPT is the file-heavy script of BenchmarkFiles: 100 files
// written, grep -rn, an awk summary, find | xargs wc -l.
export const FILES_SCRIPT = `mkdir -p data
for i in $(seq 1 100); do printf 'id,%d\\nname,item%d\\nTODO: check %d\\n' $i $i $i > data/f$i.txt; done
grep -rn TODO data | wc -l
awk -F, '$1=="id"{s+=$2; n++} END{print n, s}' data/*.txt
find data -name '*.txt' | xargs wc -l | tail -n 1`;

// FILES_WANT is its output, leading blanks aside (wc pads its columns).
export const FILES_WANT = "100\n100 5050\n300 total\n";

export const getUser = (id) => `{"id":${id},"name":"user${id}"}\n`;
export const listOrders = () => '[{"total":2.5},{"total":4}]\n';

// time runs fn (async, returns stdout) `iterations` times after a warm-up
// and returns milliseconds per run, for each of `rounds` rounds. The first
// run's output, leading blanks of lines aside, must be `want`.
export async function time(fn, { iterations = 200, rounds = 3, warmup = 30, want = WANT } = {}) {
  const out = (await fn()).replace(/^ +/gm, "");
  if (out !== want) {
    throw new Error(`wrong output: ${JSON.stringify(out)}; want ${JSON.stringify(want)}`);
  }
  for (let i = 0; i < warmup; i++) await fn();
  const results = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await fn();
    const ns = Number(process.hrtime.bigint() - start);
    results.push(ns / iterations / 1e6);
  }
  return results;
}

// flagValue returns the value after --name in argv.
export function flagValue(argv, name) {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}
