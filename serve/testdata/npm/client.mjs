// client.mjs: the official openai npm package talks to demiurge serve,
// as any Node program would: a two-message conversation through the
// Responses API (not streamed, then streamed, each message continuing
// from the previous response) and through Chat Completions (the whole
// history sent back each time), a streamed response retrieved again
// (responses.retrieve with stream and starting_after: the stream resumed
// after an event), and a request that cannot map. It prints
// one JSON object of what it saw; serve's TestNodeOpenAI checks it.
//
//   node client.mjs BASE_URL API_KEY
import OpenAI from 'openai';

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });
const messages = ['Write hello to notes.txt and show it.', 'Append world.'];

// textOf is a response's text: its output messages' text parts.
function textOf(r) {
  return r.output
    .filter((i) => i.type === 'message')
    .flatMap((i) => i.content.filter((c) => c.type === 'output_text').map((c) => c.text))
    .join('\n\n');
}

function turnOf(r, extra = {}) {
  return {
    id: r.id,
    status: r.status,
    text: textOf(r),
    conversation: r.conversation?.id,
    calls: r.output.filter((i) => i.type === 'mcp_call').map((i) => ({ name: i.name, server: i.server_label, output: i.output, status: i.status })),
    usage: r.usage?.input_tokens ?? 0,
    ...extra,
  };
}

async function responses(stream) {
  const turns = [];
  let previous;
  for (const input of messages) {
    if (!stream) {
      const r = await client.responses.create({ model: 'demiurge', input, previous_response_id: previous });
      turns.push(turnOf(r, { outputText: r.output_text }));
      previous = r.id;
      continue;
    }
    const s = await client.responses.create({ model: 'demiurge', input, previous_response_id: previous, stream: true });
    let deltas = '';
    let done;
    const types = new Set();
    for await (const ev of s) {
      types.add(ev.type);
      if (ev.type === 'response.output_text.delta') deltas += ev.delta;
      if (ev.type === 'response.completed') done = ev.response;
    }
    turns.push(turnOf(done, { deltas, events: [...types] }));
    previous = done.id;
  }
  return turns;
}

// resumed streams a response again, whole and after its event number
// after (what a client whose stream broke there asks for).
async function resumed(id, after) {
  const events = async (query) => {
    const out = [];
    for await (const ev of await client.responses.retrieve(id, { stream: true, ...query })) out.push({ seq: ev.sequence_number, type: ev.type });
    return out;
  };
  return { whole: await events({}), rest: await events({ starting_after: after }) };
}

async function chat(stream) {
  const history = [];
  const answers = [];
  for (const content of messages) {
    history.push({ role: 'user', content });
    let answer = '';
    let usage = 0;
    if (!stream) {
      const c = await client.chat.completions.create({ model: 'demiurge', messages: history });
      answer = c.choices[0].message.content;
      usage = c.usage.prompt_tokens;
    } else {
      const s = await client.chat.completions.create({ model: 'demiurge', messages: history, stream: true, stream_options: { include_usage: true } });
      for await (const chunk of s) {
        answer += chunk.choices[0]?.delta?.content ?? '';
        if (chunk.usage) usage = chunk.usage.prompt_tokens;
      }
    }
    history.push({ role: 'assistant', content: answer });
    answers.push({ answer, usage });
  }
  return answers;
}

async function refused() {
  try {
    await client.responses.create({ model: 'demiurge', input: 'hi', tools: [{ type: 'function', name: 'f', parameters: {} }] });
    return { status: 0 };
  } catch (err) {
    if (!(err instanceof OpenAI.APIError)) throw err;
    return { status: err.status, code: err.code, param: err.param, message: err.message };
  }
}

const responsesStream = await responses(true);
const out = {
  models: (await client.models.list()).data.map((m) => m.id),
  responses: await responses(false),
  responsesStream,
  resumed: await resumed(responsesStream[1].id, 3),
  chat: await chat(false),
  chatStream: await chat(true),
  refused: await refused(),
};
process.stdout.write(JSON.stringify(out) + '\n');
