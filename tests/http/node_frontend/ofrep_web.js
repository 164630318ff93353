// Runs OpenFeature's web SDK with its OFREP web provider (@openfeature/ofrep-web-provider)
// under node against an OFREP API: one bulk evaluation, then polling every 300 ms. Prints
// one JSON line per event: every HTTP answer (method, path, status, whether it sent
// If-None-Match), "ready" and "changed" with the values of FLAGCORE_ASK (a JSON list of
// [type, flag, default]) for the context FLAGCORE_CONTEXT.
//   FLAGCORE_URL=http://127.0.0.1:4242 FLAGCORE_TOKEN=... node ofrep_web.js
const { OpenFeature, ProviderEvents } = require('@openfeature/web-sdk');
const { OFREPWebProvider } = require('@openfeature/ofrep-web-provider');

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

async function observedFetch(input, init) {
  const request = new Request(input, init);
  const response = await fetch(request);
  emit({
    event: 'http',
    method: request.method,
    path: new URL(request.url).pathname,
    status: response.status,
    ifNoneMatch: request.headers.get('If-None-Match'),
  });
  return response;
}

async function main() {
  const provider = new OFREPWebProvider({
    baseUrl: process.env.FLAGCORE_URL,
    headers: [['Authorization', process.env.FLAGCORE_TOKEN]],
    fetchImplementation: observedFetch,
    pollInterval: 300,
    changeDetection: 'polling',
    cacheMode: 'disabled',
    disableVisibilityRefresh: true,
  });
  const context = JSON.parse(process.env.FLAGCORE_CONTEXT);
  const ask = JSON.parse(process.env.FLAGCORE_ASK);
  const client = OpenFeature.getClient();
  const methods = {
    boolean: 'getBooleanDetails',
    string: 'getStringDetails',
    number: 'getNumberDetails',
    object: 'getObjectDetails',
  };
  const answers = () =>
    ask.map(([type, flag, fallback]) => {
      const details = client[methods[type]](flag, fallback);
      return {
        flag,
        value: details.value,
        variant: details.variant ?? null,
        reason: details.reason ?? null,
        errorCode: details.errorCode ?? null,
      };
    });
  client.addHandler(ProviderEvents.ConfigurationChanged, () =>
    emit({ event: 'changed', answers: answers() }),
  );
  client.addHandler(ProviderEvents.Error, (details) =>
    emit({ event: 'error', message: details && details.message }),
  );
  await OpenFeature.setContext(context);
  await OpenFeature.setProviderAndWait(provider);
  emit({ event: 'ready', answers: answers() });
}

process.on('SIGTERM', () => process.exit(0));
main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
