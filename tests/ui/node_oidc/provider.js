// npm's oidc-provider (a certified OpenID Provider) on 127.0.0.1, for
// tests/ui/test_oidc_sign_in.py. Its development sign-in page takes any password for a
// login named in the accounts; the consent page's "Cancel" denies the sign-in.
//   node provider.js '{"clientId": ..., "clientSecret": ...,
//                      "accounts": {"ann": {"email": ..., "email_verified": true, ...}}}'
// prints "issuer <url>" once it listens, then reads one line from stdin: the client's
// redirect URIs as a JSON list (the server under test is started with the issuer first,
// so its callback address is known only then), and prints "ready". Each server's sign-in
// page (its callback's /ui/sign-in) is registered as a post-logout redirect URI, for
// flagcore's RP-initiated logout.
import http from 'node:http';
import readline from 'node:readline';
import Provider from 'oidc-provider';

const settings = JSON.parse(process.argv[2]);
const server = http.createServer();
let handle = (req, res) => { res.statusCode = 503; res.end(); };
server.on('request', (req, res) => handle(req, res));
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  console.log(`issuer ${issuer}`);
  readline.createInterface({ input: process.stdin }).once('line', (line) => {
    start(issuer, JSON.parse(line));
    console.log('ready');
  });
});

function start(issuer, redirectUris) {
  const provider = new Provider(issuer, {
    clients: [{
      client_id: settings.clientId,
      client_secret: settings.clientSecret,
      redirect_uris: redirectUris,
      post_logout_redirect_uris: redirectUris.map(
        (uri) => uri.replace('/ui/sign-in/oidc/callback', '/ui/sign-in')),
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    claims: {
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    // The claims of the scopes asked for go in the ID token (as Keycloak and Google do),
    // unless the test asks for the letter of Core 5.4 (as Okta does): then only userinfo.
    conformIdTokenClaims: Boolean(settings.conformIdTokenClaims),
    cookies: { keys: ['flagcore-test-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, id) {
      const account = settings.accounts[id];
      if (!account) return undefined;
      return { accountId: id, async claims() { return { sub: id, ...account }; } };
    },
  });
  handle = provider.callback();
}
process.on('SIGTERM', () => server.close(() => process.exit(0)));
