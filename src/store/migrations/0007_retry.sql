-- 0007_retry: retrying a dead node's run whose calls in doubt are all idempotent (docs/server.md
-- "Several nodes"). A mark keeps the SHA-256 of the call's arguments, so that a retried
-- execution sending another call under a key the first one used is caught; an execution row
-- says what a run's execution in flight started from (a continuation and the resolutions it
-- resumed with, or nothing: the run's input), the time its guest clock started at, and how many times it was taken over. Both go in
-- the commit that records the execution's end or wait. SQLite is one node's: it keeps the table
-- empty.
ALTER TABLE calls_sent ADD COLUMN args_sha256 TEXT NOT NULL DEFAULT '';
CREATE TABLE executions (
    run TEXT PRIMARY KEY,
    resume TEXT,
    resolutions TEXT,
    clock_ms INTEGER NOT NULL,
    attempt INTEGER NOT NULL
);
