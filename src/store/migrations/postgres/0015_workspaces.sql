-- 0015_workspaces (PostgreSQL): workspaces on runs, as ../0015. The bytes are bytea.
CREATE TABLE workspace_blobs (
    sha256 TEXT COLLATE "C" PRIMARY KEY,
    bytes BYTEA NOT NULL
);
CREATE TABLE snapshots (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    department TEXT NOT NULL,
    sha256 TEXT COLLATE "C" NOT NULL REFERENCES workspace_blobs(sha256),
    bytes BIGINT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE run_workspaces (
    run TEXT PRIMARY KEY REFERENCES runs(id),
    manifest_sha256 TEXT COLLATE "C" NOT NULL REFERENCES workspace_blobs(sha256),
    start_sha256 TEXT COLLATE "C" REFERENCES workspace_blobs(sha256),
    end_sha256 TEXT COLLATE "C" REFERENCES workspace_blobs(sha256)
);
CREATE TABLE run_files (
    run TEXT NOT NULL REFERENCES runs(id),
    path TEXT COLLATE "C" NOT NULL,
    size BIGINT NOT NULL,
    sha256 TEXT COLLATE "C" NOT NULL REFERENCES workspace_blobs(sha256),
    mount TEXT,
    key TEXT,
    PRIMARY KEY (run, path)
);
