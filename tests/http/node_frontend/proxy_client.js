// Runs Unleash's browser SDK (unleash-proxy-client) under node against a Frontend API and
// prints one JSON line per event: ready/update (with isEnabled and getVariant of every flag
// in FLAGCORE_FLAGS for the context), every HTTP answer the SDK got (method, path, status),
// errors. Refresh and metrics every second.
//   FLAGCORE_URL=http://127.0.0.1:4242/api/frontend FLAGCORE_TOKEN=... FLAGCORE_FLAGS=a,b
//   FLAGCORE_POST=1 (usePOSTrequests) node proxy_client.js
//   FLAGCORE_CONTEXT='{"userId":"7","properties":{"plan":"team"}}' (default: alice, plan pro)
const { UnleashClient, InMemoryStorageProvider, EVENTS } = require('unleash-proxy-client');

const flags = (process.env.FLAGCORE_FLAGS || '').split(',').filter(Boolean);
const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

// The SDK takes any fetch: this one reports each answer's status, so the test sees the
// 304s (ETag) and the metrics posts' statuses, which the SDK itself does not check.
async function observedFetch(url, init) {
  const response = await fetch(url, init);
  emit({ event: 'http', method: init.method, path: new URL(url).pathname, status: response.status });
  return response;
}

const client = new UnleashClient({
  url: process.env.FLAGCORE_URL,
  clientKey: process.env.FLAGCORE_TOKEN,
  appName: 'web-shop',
  refreshInterval: 1,
  metricsInterval: 1,
  metricsIntervalInitial: 1,
  storageProvider: new InMemoryStorageProvider(),
  usePOSTrequests: process.env.FLAGCORE_POST === '1',
  fetch: observedFetch,
  context: process.env.FLAGCORE_CONTEXT
    ? JSON.parse(process.env.FLAGCORE_CONTEXT)
    : { userId: 'alice', properties: { plan: 'pro' } },
});

function state() {
  const answers = {};
  for (const flag of flags) {
    answers[flag] = { enabled: client.isEnabled(flag), variant: client.getVariant(flag) };
  }
  return answers;
}

client.on(EVENTS.READY, () => emit({ event: 'ready', state: state() }));
client.on(EVENTS.UPDATE, () => emit({ event: 'update', state: state() }));
client.on(EVENTS.SENT, (payload) =>
  emit({ event: 'sent', toggles: payload.bucket.toggles, appName: payload.appName }),
);
client.on(EVENTS.ERROR, (error) => emit({ event: 'error', error: JSON.stringify(error) }));
client.start();
process.on('SIGTERM', () => {
  client.stop();
  process.exit(0);
});
