-- 0001_init: principals, their keys and role grants, departments, and the audit log.
CREATE TABLE principals (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('user', 'agent')),
    created TEXT NOT NULL
);
CREATE TABLE api_keys (
    prefix TEXT PRIMARY KEY,
    principal TEXT NOT NULL REFERENCES principals(name),
    hash BLOB NOT NULL,
    created TEXT NOT NULL,
    revoked TEXT
);
CREATE INDEX api_keys_principal ON api_keys(principal);
CREATE TABLE departments (
    name TEXT PRIMARY KEY,
    autonomy TEXT NOT NULL DEFAULT 'autonomous' CHECK (autonomy IN ('autonomous', 'supervised')),
    allow_adhoc INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL
);
CREATE TABLE role_grants (
    principal TEXT NOT NULL REFERENCES principals(name),
    role TEXT NOT NULL,
    department TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (principal, role, department)
);
CREATE TABLE audit (
    seq INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT,
    department TEXT,
    details TEXT NOT NULL
);
