// Runs the official Node SDK (unleash-client) against a server and prints, as one JSON
// line, its evaluation of FLAGCORE_FLAGS for a few users each time that evaluation changes.
//   FLAGCORE_URL=http://127.0.0.1:4242/api FLAGCORE_TOKEN=... FLAGCORE_MODE=streaming|delta|polling
//   FLAGCORE_FLAGS=a,b node follow.js
const { Unleash } = require('unleash-client');

const mode = process.env.FLAGCORE_MODE;
const experimentalMode =
  mode === 'streaming'
    ? { type: 'streaming' }
    : mode === 'delta'
      ? { type: 'polling', format: 'delta' }
      : { type: 'polling', format: 'full' };
const client = new Unleash({
  url: process.env.FLAGCORE_URL,
  appName: 'node-follow',
  instanceId: `node-${mode}`,
  customHeaders: { Authorization: process.env.FLAGCORE_TOKEN },
  refreshInterval: mode === 'streaming' ? 15000 : 200,
  metricsInterval: 1000,
  experimentalMode,
  storageProvider: { set: async () => {}, get: async () => undefined },
  skipInstanceCountWarning: true,
});
client.on('error', (error) => process.stderr.write(`error: ${error}\n`));
client.on('warn', (message) => process.stderr.write(`warn: ${message}\n`));

const flags = (process.env.FLAGCORE_FLAGS || '').split(',').filter(Boolean);
const users = ['1', '2', '3', '4', '5', '6', '7', '8'];
let last = '';
function report() {
  const state = {};
  for (const flag of flags) {
    state[flag] = users.map((userId) => {
      const context = { userId, properties: { country: 'NO' } };
      const variant = client.getVariant(flag, context);
      return [client.isEnabled(flag, context), variant.name];
    });
  }
  const line = JSON.stringify({ mode, state });
  if (line !== last) {
    last = line;
    process.stdout.write(`${line}\n`);
  }
}
client.on('ready', () => process.stderr.write('ready\n'));
setInterval(report, 5);
process.on('SIGTERM', () => {
  client.destroy();
  process.exit(0);
});
