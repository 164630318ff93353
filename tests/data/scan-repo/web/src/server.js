const { initialize } = require('unleash-client');
const unleash = initialize({ url: 'http://localhost:4242/api' });
if (unleash.isEnabled('fast-payments')) {
  console.log(unleash.getVariant("checkout-colour"));
}
const open = await OpenFeature.getClient().getBooleanValue('dark-mode', false);
