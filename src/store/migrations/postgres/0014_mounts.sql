-- 0014_mounts (PostgreSQL): mounts and the versions' workspace manifests, as ../0014.
CREATE TABLE mounts (
    name TEXT COLLATE "C" PRIMARY KEY,
    department TEXT COLLATE "C" NOT NULL REFERENCES departments(name),
    kind TEXT NOT NULL CHECK (kind IN ('local', 's3')),
    path TEXT,
    endpoint TEXT,
    bucket TEXT,
    region TEXT,
    access_key_id TEXT,
    secret TEXT,
    created TEXT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX mounts_department ON mounts(department);
ALTER TABLE versions ADD COLUMN workspace TEXT;
