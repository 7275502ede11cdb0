-- 0015_workspaces: workspaces on runs (docs/server.md "Workspaces"). File bytes are kept once in
-- workspace_blobs under the hex SHA-256 of those bytes, whatever number of runs and snapshots
-- name them: a run's outputs, its workspace at the end (a tar), the tar it started from, an
-- uploaded snapshot and the manifest a run was given. A run with a workspace has a row of
-- run_workspaces: the manifest it runs with (the version's or its own), the tar that replaced
-- the manifest's inline entries (from_run, from_snapshot; NULL when none) and, once it completed,
-- its workspace at the end. Its outputs are rows of run_files (mount and key set for a file
-- written back to a mount). A snapshot (POST /v1/snapshots) is an uploaded tar, its principal's,
-- for runs of its department.
CREATE TABLE workspace_blobs (
    sha256 TEXT PRIMARY KEY,
    bytes BLOB NOT NULL
);
CREATE TABLE snapshots (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    department TEXT NOT NULL,
    sha256 TEXT NOT NULL REFERENCES workspace_blobs(sha256),
    bytes INTEGER NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE run_workspaces (
    run TEXT PRIMARY KEY REFERENCES runs(id),
    manifest_sha256 TEXT NOT NULL REFERENCES workspace_blobs(sha256),
    start_sha256 TEXT REFERENCES workspace_blobs(sha256),
    end_sha256 TEXT REFERENCES workspace_blobs(sha256)
);
CREATE TABLE run_files (
    run TEXT NOT NULL REFERENCES runs(id),
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL REFERENCES workspace_blobs(sha256),
    mount TEXT,
    key TEXT,
    PRIMARY KEY (run, path)
);
