// Runs OpenFeature's server SDK with its OFREP provider (@openfeature/ofrep-provider)
// against an OFREP API and prints one JSON line: the details of each evaluation asked in
// FLAGCORE_ASK (a JSON list of [type, flag, default]) for the context FLAGCORE_CONTEXT.
//   FLAGCORE_URL=http://127.0.0.1:4242 FLAGCORE_TOKEN=... FLAGCORE_HEADER=Authorization|X-API-Key
const { OpenFeature } = require('@openfeature/server-sdk');
const { OFREPProvider } = require('@openfeature/ofrep-provider');

async function main() {
  const header = process.env.FLAGCORE_HEADER || 'Authorization';
  const provider = new OFREPProvider({
    baseUrl: process.env.FLAGCORE_URL,
    headers: [[header, process.env.FLAGCORE_TOKEN]],
  });
  await OpenFeature.setProviderAndWait(provider);
  const client = OpenFeature.getClient();
  const context = JSON.parse(process.env.FLAGCORE_CONTEXT);
  const methods = {
    boolean: 'getBooleanDetails',
    string: 'getStringDetails',
    number: 'getNumberDetails',
    object: 'getObjectDetails',
  };
  const answers = [];
  for (const [type, flag, fallback] of JSON.parse(process.env.FLAGCORE_ASK)) {
    const details = await client[methods[type]](flag, fallback, context);
    answers.push({
      flag,
      value: details.value,
      variant: details.variant ?? null,
      reason: details.reason ?? null,
      errorCode: details.errorCode ?? null,
      errorMessage: details.errorMessage ?? null,
    });
  }
  process.stdout.write(`${JSON.stringify(answers)}\n`);
  await OpenFeature.close();
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
