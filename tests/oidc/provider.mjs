// A real OpenID provider on 127.0.0.1, for the lean profile's tests and `make oidc`:
// node-oidc-provider (OpenID Certified), with its own discovery document, JWKS and token
// endpoint. Access tokens are JWTs (RFC 9068, typ at+jwt) from the client credentials grant:
// each client id is a user (`alice`, `bob`, ... any id: clients are made on demand, secret
// "secret"). ID tokens come from the CIBA grant, server to server, approved at once.
// Tokens are for the audience "likes-web" (the app's client id, as Cognito and Okta tokens
// carry theirs); resource urn:likes:es256 signs with ES256, any other with RS256.
//
// Test-only controls, POST, loopback only: /_test/rotate publishes a new RS256 and ES256 key
// and signs with them at once (the old ones stay published), /_test/withdraw unpublishes every
// key but the newest pair; GET /_test/stats counts requests per path.
//
// Usage: node provider.mjs [port]   (0 or none: any free port). Prints one JSON line,
// {"issuer": "http://127.0.0.1:<port>"}, once it listens.
import http from 'node:http';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';

const AUDIENCE = 'likes-web';
const SECRET = 'secret';
const requested = Number(process.argv[2] ?? 0);

let generation = 0;
function keyPair() {
  generation += 1;
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
    .export({ format: 'jwk' });
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
    .export({ format: 'jwk' });
  return [
    { ...rsa, kid: `rs-${generation}`, alg: 'RS256', use: 'sig' },
    { ...ec, kid: `es-${generation}`, alg: 'ES256', use: 'sig' },
  ];
}

// Newest first: the provider signs with the first key of an algorithm.
let keys = keyPair();
const stats = {};

function client(id) {
  return {
    client_id: id,
    client_secret: SECRET,
    grant_types: ['client_credentials', 'urn:openid:params:grant-type:ciba'],
    response_types: [],
    redirect_uris: [],
    backchannel_token_delivery_mode: 'poll',
  };
}

class OnDemandClients {
  // Any client id is a client: each one a user of the tests.
  constructor(name) { this.name = name; this.items = new Map(); }
  async upsert(id, payload) { this.items.set(id, payload); }
  async find(id) {
    if (this.name === 'Client') return client(id);
    return this.items.get(id);
  }
  async findByUid(uid) { return [...this.items.values()].find((p) => p.uid === uid); }
  async findByUserCode() { return undefined; }
  async destroy(id) { this.items.delete(id); }
  async revokeByGrantId() {}
  async consume(id) { const p = this.items.get(id); if (p) p.consumed = Math.floor(Date.now() / 1000); }
}

function build(issuer) {
  const provider = new Provider(issuer, {
    adapter: OnDemandClients,
    jwks: { keys },
    findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      ciba: {
        enabled: true,
        deliveryModes: ['poll'],
        processLoginHint: async (ctx, hint) => hint,
        validateRequestContext: async () => {},
        verifyUserCode: async () => {},
        validateBindingMessage: async () => {},
        // The user approves on their device at once: the request is saved before this runs.
        triggerAuthenticationDevice: async (ctx, request, account, c) => {
          const grant = new provider.Grant({ clientId: c.clientId, accountId: account.accountId });
          grant.addOIDCScope('openid');
          await provider.backchannelResult(request, await grant.save());
        },
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:likes:rs256',
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => ({
          scope: 'likes',
          audience: AUDIENCE,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: resource === 'urn:likes:es256' ? 'ES256' : 'RS256' } },
        }),
      },
    },
    clientBasedCORS: () => false,
    cookies: { keys: ['likes-test-only'] },
    // Ten minutes for everything it issues, stated so the provider need not guess.
    ttl: {
      AccessToken: 600, BackchannelAuthenticationRequest: 600, ClientCredentials: 600,
      Grant: 600, IdToken: 600, Interaction: 600, Session: 600,
    },
  });
  provider.on('server_error', (ctx, err) => console.error(err));
  return provider;
}

let provider;
let issuer;
const server = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  stats[path] = (stats[path] ?? 0) + 1;
  if (path.startsWith('/_test/')) return control(path, req, res);
  return provider.callback()(req, res);
});

function control(path, req, res) {
  const reply = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (path === '/_test/stats' && req.method === 'GET') return reply(200, stats);
  if (path === '/_test/rotate' && req.method === 'POST') {
    keys = [...keyPair(), ...keys];
    provider = build(issuer);
    return reply(200, { kids: keys.map((k) => k.kid) });
  }
  if (path === '/_test/withdraw' && req.method === 'POST') {
    keys = keys.slice(0, 2);
    provider = build(issuer);
    return reply(200, { kids: keys.map((k) => k.kid) });
  }
  return reply(404, { error: 'no such control' });
}

server.listen(requested, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  provider = build(issuer);
  console.log(JSON.stringify({ issuer }));
});
