-- 0005_connectors (PostgreSQL): HTTP connectors that serve template functions, as ../0005.
CREATE TABLE connectors (
    name TEXT COLLATE "C" PRIMARY KEY,
    department TEXT COLLATE "C" NOT NULL REFERENCES departments(name),
    url TEXT NOT NULL,
    signing_secret TEXT NOT NULL,
    headers TEXT NOT NULL,
    header_names TEXT NOT NULL,
    timeout_ms BIGINT NOT NULL,
    functions TEXT NOT NULL,
    created TEXT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX connectors_department ON connectors(department);
