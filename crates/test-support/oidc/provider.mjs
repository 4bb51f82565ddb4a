// node's oidc-provider (a certified OpenID provider) on loopback, for the
// tests of protected servers: dynamic registration, the authorization code
// flow with its own development login and consent pages, resource
// indicators (RFC 8707: access tokens for an MCP endpoint, JWT or opaque),
// refresh tokens, client credentials, introspection and revocation.
//
// Usage: node provider.mjs   (settings in the environment)
//   OIDC_MODULE          the oidc-provider package directory (.peers/oidc/...)
//   OIDC_PORT            the port (0: any; reuse one to restart an issuer)
//   OIDC_TOKEN_FORMAT    jwt (default) or opaque
//   OIDC_KEY_ID          the kid of the signing keys (a new one rotates them)
//   OIDC_RESOURCE_SCOPE  the scopes an MCP endpoint knows (default notes:write)
//   OIDC_CLIENTS         JSON array of static clients (introspection, client credentials)
//   OIDC_TLS_CERT, OIDC_TLS_KEY  optional: PEM files; https then
// It prints "oidc-provider: issuer URL" on stdout once it listens.
//
// Routes under /test/ are the tests' own: POST /test/revoke-access-tokens
// forgets every access token (a refresh still works), POST
// /test/revoke-grants forgets every grant and its tokens (a new sign-in is
// needed), GET /test/counts says how many interactions of each prompt
// started, how many tokens each grant type issued and how many clients
// registered, GET /test/issued lists
// the ids of every code and token issued, POST /test/clock?offset=SECONDS
// sets its clock off.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const env = process.env;
// Its clock, which POST /test/clock?offset=SECONDS sets off (a provider
// whose clock is behind issues tokens that are born expired).
let offset = 0;
const realNow = Date.now;
Date.now = () => realNow() + offset;
// The provider's start-up warnings are about what a test setup is on
// purpose (its development login pages, the Node.js of the machine).
const warn = console.warn;
console.warn = (first, ...rest) => {
  if (!String(first).startsWith('oidc-provider WARNING')) warn(first, ...rest);
};
const { default: Provider } = await import(pathToFileURL(join(env.OIDC_MODULE, 'lib/index.js')).href);

// Every artifact in one map, so the test routes can forget them; the ids of
// codes and tokens (an opaque token's value is its id) kept for the tests
// to look for in logs.
const stored = new Map();
const issued = [];
const SECRET_MODELS = new Set(['AccessToken', 'RefreshToken', 'AuthorizationCode']);
class MemoryAdapter {
  constructor(model) { this.model = model; }
  key(id) { return `${this.model}:${id}`; }
  async upsert(id, payload, expiresIn) {
    if (SECRET_MODELS.has(this.model)) issued.push(id);
    stored.set(this.key(id), { payload, expires: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
  }
  async find(id) {
    const entry = stored.get(this.key(id));
    if (!entry || entry.expires < Date.now()) return undefined;
    return entry.payload;
  }
  async findByUid(uid) {
    for (const [key, entry] of stored) {
      if (key.startsWith(`${this.model}:`) && entry.payload.uid === uid) return entry.payload;
    }
    return undefined;
  }
  async findByUserCode(userCode) {
    for (const [key, entry] of stored) {
      if (key.startsWith(`${this.model}:`) && entry.payload.userCode === userCode) return entry.payload;
    }
    return undefined;
  }
  async consume(id) {
    const entry = stored.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) { stored.delete(this.key(id)); }
  async revokeByGrantId(grantId) {
    for (const [key, entry] of stored) {
      if (key.startsWith(`${this.model}:`) && entry.payload.grantId === grantId) stored.delete(key);
    }
  }
}

function forget(predicate) {
  for (const key of [...stored.keys()]) if (predicate(key)) stored.delete(key);
}

const kid = env.OIDC_KEY_ID || 'key-1';
const jwk = (type, options, alg) => ({
  ...generateKeyPairSync(type, options).privateKey.export({ format: 'jwk' }), kid: `${kid}-${alg}`, alg, use: 'sig',
});
const format = env.OIDC_TOKEN_FORMAT || 'jwt';
const resourceScope = env.OIDC_RESOURCE_SCOPE ?? 'notes:write';

const tls = env.OIDC_TLS_CERT && { cert: readFileSync(env.OIDC_TLS_CERT), key: readFileSync(env.OIDC_TLS_KEY) };
const server = tls ? createTlsServer(tls) : createServer();
await new Promise((resolve) => server.listen(Number(env.OIDC_PORT || 0), '127.0.0.1', resolve));
const issuer = `${tls ? 'https' : 'http'}://127.0.0.1:${server.address().port}`;

const counts = { prompts: {}, grants: {}, registrations: 0 };
const provider = new Provider(issuer, {
  adapter: MemoryAdapter,
  clients: JSON.parse(env.OIDC_CLIENTS || '[]'),
  jwks: { keys: [jwk('ec', { namedCurve: 'P-256' }, 'ES256'), jwk('rsa', { modulusLength: 2048 }, 'RS256')] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client that names no resource gets tokens for the one it was granted.
      defaultResource: async (_ctx, _client, oneOf) => oneOf?.[0],
      useGrantedResource: async () => true,
      // Any endpoint on loopback is a resource server of this issuer.
      getResourceServerInfo: async (_ctx, resource) => {
        if (!resource.startsWith('http://127.0.0.1:')) throw new Error(`not a loopback resource: ${resource}`);
        return { scope: resourceScope, audience: resource, accessTokenFormat: format, jwt: { sign: { alg: 'ES256' } } };
      },
    },
  },
  pkce: { required: () => true },
  // A refresh token for every code grant of a client allowed to refresh:
  // the provider's default wants offline_access and prompt=consent.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { AccessToken: 3600, ClientCredentials: 3600, Grant: 3600, Interaction: 600, Session: 3600 },
});
// Device sign-ins are polled every second (RFC 8628 lets the server name
// the interval; without one clients wait 5 s between polls).
provider.use(async (ctx, next) => {
  await next();
  if (ctx.oidc?.route === 'device_authorization' && ctx.status === 200) ctx.body = { ...ctx.body, interval: 1 };
});
provider.on('interaction.started', (_ctx, prompt) => {
  counts.prompts[prompt.name] = (counts.prompts[prompt.name] || 0) + 1;
});
provider.on('grant.success', (ctx) => {
  const type = ctx.oidc.params.grant_type;
  counts.grants[type] = (counts.grants[type] || 0) + 1;
});
provider.on('registration_create.success', () => {
  counts.registrations += 1;
});
provider.on('server_error', (_ctx, error) => console.error('oidc-provider: server error', error));

const callback = provider.callback();
server.on('request', (request, response) => {
  const answer = (body) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  if (request.method === 'POST' && request.url === '/test/revoke-access-tokens') {
    forget((key) => key.startsWith('AccessToken:'));
    return answer({});
  }
  if (request.method === 'POST' && request.url === '/test/revoke-grants') {
    forget((key) => /^(Grant|AccessToken|RefreshToken|AuthorizationCode):/.test(key));
    return answer({});
  }
  if (request.method === 'GET' && request.url === '/test/counts') return answer(counts);
  if (request.method === 'GET' && request.url === '/test/issued') return answer(issued);
  if (request.method === 'POST' && request.url.startsWith('/test/clock?offset=')) {
    offset = Number(request.url.split('=')[1]) * 1000;
    return answer({});
  }
  return callback(request, response);
});
console.log(`oidc-provider: issuer ${issuer}`);
