-- 0007_retry (PostgreSQL): retrying a dead node's run whose calls in doubt are all idempotent,
-- as ../0007.
ALTER TABLE calls_sent ADD COLUMN args_sha256 TEXT NOT NULL DEFAULT '';
CREATE TABLE executions (
    run TEXT COLLATE "C" PRIMARY KEY,
    resume TEXT,
    resolutions TEXT,
    clock_ms BIGINT NOT NULL,
    attempt INTEGER NOT NULL
);
