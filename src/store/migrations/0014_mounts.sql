-- 0014_mounts: storage an admin registered for a department, which a version's workspace
-- manifest names (docs/server.md "Mounts"): a local directory (kind local: path, resolved, under
-- one of airlockd's mounts.local_roots) or an S3-compatible bucket (kind s3: endpoint, bucket,
-- region, access_key_id and the secret access key, sealed by airlockd as a connector's secret:
-- src/server/secretbox.c, "v1:" + hex). The columns of the other kind are NULL. A version's
-- workspace manifest (a JSON object, compact; NULL: none) is kept with the version and covered
-- by its digest.
CREATE TABLE mounts (
    name TEXT PRIMARY KEY,
    department TEXT NOT NULL REFERENCES departments(name),
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
