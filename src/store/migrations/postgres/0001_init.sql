-- 0001_init (PostgreSQL): principals, their keys and role grants, departments, and the audit log.
-- The same schema as ../0001_init.sql in PostgreSQL's words: BYTEA for BLOB, BIGINT for the
-- 64-bit integers, and COLLATE "C" on the columns lists are sorted by, so that both back ends
-- order names byte by byte whatever the database's locale.
CREATE TABLE principals (
    name TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('user', 'agent')),
    created TEXT NOT NULL
);
CREATE TABLE api_keys (
    prefix TEXT PRIMARY KEY,
    principal TEXT COLLATE "C" NOT NULL REFERENCES principals(name),
    hash BYTEA NOT NULL,
    created TEXT COLLATE "C" NOT NULL,
    revoked TEXT
);
CREATE INDEX api_keys_principal ON api_keys(principal);
CREATE TABLE departments (
    name TEXT COLLATE "C" PRIMARY KEY,
    autonomy TEXT NOT NULL DEFAULT 'autonomous' CHECK (autonomy IN ('autonomous', 'supervised')),
    allow_adhoc INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL
);
CREATE TABLE role_grants (
    principal TEXT COLLATE "C" NOT NULL REFERENCES principals(name),
    role TEXT COLLATE "C" NOT NULL,
    department TEXT COLLATE "C" NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (principal, role, department)
);
CREATE TABLE audit (
    seq BIGINT PRIMARY KEY,
    time TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT,
    department TEXT,
    details TEXT NOT NULL
);
