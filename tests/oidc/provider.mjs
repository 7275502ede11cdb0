// provider.mjs - a real OpenID Connect provider for the single sign-on tests: oidc-provider
// (pinned in package.json and package-lock.json, installed by `npm ci` into the build folder)
// on a loopback port, with one confidential client (client_secret_basic, PKCE required) and
// its development login form, where any login name signs in as that account. Accounts name
// their email and groups. An adversary's tokens come from the same provider: /test/mode sets
// how the next token answers are altered and signed again with the provider's own key (another
// audience, an expired token), as a provider that was misconfigured or replayed would send them,
// or how its redirect back is altered (another state, as an attacker's link would carry).

import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
// where npm_ci.cmake installed oidc-provider: AIRLOCK_OIDC_DEPS, else the default build folder's
const DEPS = process.env.AIRLOCK_OIDC_DEPS || path.join(HERE, '..', '..', 'build', 'tests', 'oidc', 'deps');
const require = createRequire(path.join(DEPS, 'package.json'));

async function load(name) {
    return import(pathToFileURL(require.resolve(name)).href);
}

// accounts: { login: { email, groups, email_verified (true unless false) } }
export async function startProvider({ port, clientId, clientSecret, redirectUrl, accounts }) {
    if (!fs.existsSync(path.join(DEPS, 'node_modules', 'oidc-provider'))) {
        throw new Error('oidc-provider is not installed in ' + DEPS + ' (ctest -R oidc.setup)');
    }
    const { default: Provider } = await load('oidc-provider');
    const jose = await load('jose');
    const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await jose.exportJWK(privateKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const issuer = 'http://127.0.0.1:' + port;
    const provider = new Provider(issuer, {
        clients: [{
            client_id: clientId, client_secret: clientSecret, redirect_uris: [redirectUrl],
            grant_types: ['authorization_code'], response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
        }],
        jwks: { keys: [jwk] },
        pkce: { required: () => true },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['groups'] },
        conformIdTokenClaims: false, // the claims of the scopes go into the ID token
        cookies: { keys: ['airlock-test-cookie-key-0123456789'] },
        features: { devInteractions: { enabled: true } },
        async findAccount(ctx, id) {
            const a = accounts[id] || { email: id + '@example.com', groups: [] };
            return {
                accountId: id,
                async claims() {
                    return { sub: id, email: a.email, email_verified: a.email_verified !== false, groups: a.groups };
                },
            };
        },
        // a first-party client: no consent screen
        async loadExistingGrant(ctx) {
            const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
            grant.addOIDCScope('openid email profile');
            await grant.save();
            return grant;
        },
    });
    let mode = '';
    const key = await jose.importJWK(jwk, 'RS256');
    provider.use(async (ctx, next) => {
        if (ctx.path === '/test/mode') {
            mode = ctx.query.set || '';
            ctx.body = { mode };
            return;
        }
        await next();
        const location = ctx.response.get('Location');
        if (mode === 'tamper_state' && location && location.startsWith(redirectUrl)) {
            const u = new URL(location);
            const state = u.searchParams.get('state') || '';
            u.searchParams.set('state', (state[0] === 'A' ? 'B' : 'A') + state.slice(1));
            ctx.redirect(u.toString());
        }
        if (ctx.path === '/token' && mode && ctx.body && ctx.body.id_token) {
            const claims = jose.decodeJwt(ctx.body.id_token);
            if (mode === 'wrong_audience') {
                claims.aud = 'another-client';
                delete claims.azp;
            } else if (mode === 'expired') {
                claims.iat -= 7200;
                claims.exp = claims.iat + 600;
            }
            ctx.body = { ...ctx.body, id_token: await new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(key) };
        }
    });
    const server = await new Promise((resolve) => {
        const s = provider.listen(port, '127.0.0.1', () => resolve(s));
    });
    return {
        issuer,
        async setMode(m) {
            const r = await fetch(issuer + '/test/mode?set=' + encodeURIComponent(m));
            if (!r.ok) {
                throw new Error('provider mode: ' + r.status);
            }
        },
        stop() {
            server.closeAllConnections();
            return new Promise((resolve) => server.close(resolve));
        },
    };
}
