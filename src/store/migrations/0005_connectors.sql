-- 0005_connectors: HTTP connectors that serve template functions. signing_secret and headers are
-- sealed by airlockd (src/server/secretbox.c: AES-256-GCM, "v1:" + hex) and never stored in the
-- clear; header_names (a JSON array) is the plain list the API shows. functions is the JSON
-- object of the connector's functions as registered (descriptions, schemas, flags).
CREATE TABLE connectors (
    name TEXT PRIMARY KEY,
    department TEXT NOT NULL REFERENCES departments(name),
    url TEXT NOT NULL,
    signing_secret TEXT NOT NULL,
    headers TEXT NOT NULL,
    header_names TEXT NOT NULL,
    timeout_ms INTEGER NOT NULL,
    functions TEXT NOT NULL,
    created TEXT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX connectors_department ON connectors(department);
