import { useFlag, useVariant } from '@unleash/proxy-client-react';

export function App() {
  const enabled = useFlag('new-checkout');
  const colour = useVariant("checkout-colour");
  const typo = unleash.isEnabled(`new-chekout`);
  const dynamic = unleash.isEnabled(`flag-${name}`);
  return enabled && colour && typo && dynamic;
}
