-- 0017_sessions (PostgreSQL): sessions of the web UI, as ../0017.
CREATE TABLE sessions (
    token_sha256 TEXT COLLATE "C" PRIMARY KEY,
    principal TEXT NOT NULL,
    identity TEXT NOT NULL,
    grants TEXT NOT NULL,
    created TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX sessions_principal ON sessions(principal);
