-- 0010_journal (PostgreSQL): durable runs, as ../0010. The answers' bytes are bytea.
CREATE TABLE journal_blobs (
    sha256 TEXT COLLATE "C" PRIMARY KEY,
    bytes BYTEA NOT NULL
);
CREATE TABLE journal (
    run TEXT NOT NULL REFERENCES runs(id),
    position BIGINT NOT NULL CHECK (position >= 1),
    call_id TEXT NOT NULL,
    function TEXT NOT NULL,
    args_sha256 TEXT NOT NULL,
    idempotency_key TEXT,
    kind INTEGER NOT NULL CHECK (kind IN (0, 1, 2)),
    sync INTEGER NOT NULL CHECK (sync IN (0, 1)),
    clock_ms BIGINT NOT NULL,
    answer_sha256 TEXT COLLATE "C" NOT NULL REFERENCES journal_blobs(sha256),
    PRIMARY KEY (run, position)
);
ALTER TABLE runs ADD COLUMN seed TEXT;
ALTER TABLE runs ADD COLUMN clock_ms BIGINT;
ALTER TABLE runs ADD COLUMN recovered INTEGER NOT NULL DEFAULT 0;
