// The script of tools/scripted/bench_test.go (5 tool calls, 5 jq filters)
// and a timer shared by the peer runners.
export const SCRIPT = `for id in 1 2 3; do get_user --id $id | jq -r .name; done
total=$(list_orders --user_id $USER_ID | jq '[.[].total] | add'); echo "total=$total"
get_user --id 9 | jq -c '{id}'`;

export const WANT = 'user1\nuser2\nuser3\ntotal=6.5\n{"id":9}\n';

export const getUser = (id) => `{"id":${id},"name":"user${id}"}\n`;
export const listOrders = () => '[{"total":2.5},{"total":4}]\n';

// time runs fn (async, returns stdout) `iterations` times after a warm-up
// and returns milliseconds per run, for each of `rounds` rounds.
export async function time(fn, { iterations = 200, rounds = 3, warmup = 30 } = {}) {
  const out = await fn();
  if (out !== WANT) {
    throw new Error(`wrong output: ${JSON.stringify(out)}; want ${JSON.stringify(WANT)}`);
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
