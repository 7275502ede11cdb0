-- 0017_sessions: sessions of the web UI after a sign-in with OpenID Connect (docs/sso.md). The
-- browser holds a random token in the cookie airlock_session; only its SHA-256 is kept here, with
-- the principal it signs in, the identity the provider vouched for, the grants group_roles gave
-- at that sign-in (a JSON array of [role, department]) and its end (ms since the epoch). Logout
-- deletes the row; each sign-in deletes the rows past their end.
CREATE TABLE sessions (
    token_sha256 TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    identity TEXT NOT NULL,
    grants TEXT NOT NULL,
    created TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX sessions_principal ON sessions(principal);
