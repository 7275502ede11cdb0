-- 0010_journal: durable runs (docs/server.md "Durable runs"). Each answered connector call of a
-- run is a row of journal, numbered by the order its answer reached the guest (position, from
-- 1), written in the same transaction as the run's audit records, before the guest sees the
-- answer. An answer's bytes are kept once in journal_blobs, under the hex SHA-256 of those bytes,
-- whatever number of rows (a run's retries, its forks, other runs) name them. kind: 0 a value,
-- 1 a throw, 2 a throw of a type error. A run keeps what its replay starts from beyond its input:
-- the guest's random seed (16 hex digits) and clock (ms since the epoch), and how many times it
-- was recovered from its journal.
CREATE TABLE journal_blobs (
    sha256 TEXT PRIMARY KEY,
    bytes BLOB NOT NULL
);
CREATE TABLE journal (
    run TEXT NOT NULL REFERENCES runs(id),
    position INTEGER NOT NULL CHECK (position >= 1),
    call_id TEXT NOT NULL,
    function TEXT NOT NULL,
    args_sha256 TEXT NOT NULL,
    idempotency_key TEXT,
    kind INTEGER NOT NULL CHECK (kind IN (0, 1, 2)),
    sync INTEGER NOT NULL CHECK (sync IN (0, 1)),
    clock_ms INTEGER NOT NULL,
    answer_sha256 TEXT NOT NULL REFERENCES journal_blobs(sha256),
    PRIMARY KEY (run, position)
);
ALTER TABLE runs ADD COLUMN seed TEXT;
ALTER TABLE runs ADD COLUMN clock_ms INTEGER;
ALTER TABLE runs ADD COLUMN recovered INTEGER NOT NULL DEFAULT 0;
