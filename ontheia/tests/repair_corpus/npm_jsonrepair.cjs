// Runs the npm `jsonrepair` package over a JSON Lines corpus (one JSON string per line)
// and prints one JSON line per input: {"ok":true,"value":<parsed>} or {"ok":false}.
// Usage: node npm_jsonrepair.cjs <corpus.jsonl>   (NODE_PATH must reach jsonrepair)
'use strict';
const fs = require('fs');
const { jsonrepair } = require('jsonrepair');

const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.length > 0);
const out = [];
for (const line of lines) {
  const input = JSON.parse(line);
  try {
    const value = JSON.parse(jsonrepair(input));
    out.push(JSON.stringify({ ok: true, value }));
  } catch (e) {
    out.push(JSON.stringify({ ok: false }));
  }
}
process.stdout.write(out.join('\n') + '\n');
