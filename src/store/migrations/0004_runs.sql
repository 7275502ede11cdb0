-- 0004_runs: runs and the approvals that wait for a person. A run's row holds what its answer
-- needs (outcome: the JSON members value/error/console/stats once it has one); a run waiting on
-- sensitive calls holds its continuation until one resume claims it (set back to NULL).
CREATE TABLE runs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    template TEXT,
    version INTEGER,
    department TEXT NOT NULL,
    principal TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'awaiting_approval', 'completed',
                                            'failed', 'cancelled', 'denied')),
    input TEXT NOT NULL,
    source TEXT,
    language TEXT,
    functions TEXT,
    outcome TEXT,
    continuation TEXT,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE INDEX runs_template ON runs(template, seq);
CREATE INDEX runs_status ON runs(status, seq);
CREATE TABLE approvals (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    run TEXT NOT NULL REFERENCES runs(id),
    kind TEXT NOT NULL CHECK (kind IN ('run', 'host_call')),
    interruption TEXT,
    function TEXT,
    args TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'cancelled')),
    requested_by TEXT NOT NULL,
    department TEXT NOT NULL,
    template TEXT,
    version INTEGER,
    created TEXT NOT NULL,
    decided_by TEXT,
    decided TEXT,
    comment TEXT,
    consumed INTEGER NOT NULL DEFAULT 0 -- its decision went into a resume
);
CREATE INDEX approvals_status ON approvals(status, seq);
CREATE INDEX approvals_run ON approvals(run);
