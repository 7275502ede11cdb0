-- 0012_in_doubt: a person settles the call in doubt (docs/server.md "Durable runs"). A run whose
-- execution died with a call sent and not answered, of a function not marked idempotent, waits
-- for an approval of kind in_doubt per such call: the call's connector, when it was marked sent,
-- its idempotency key, its number in the run (call_seq), the SHA-256 of its arguments, and, once a
-- person answered it (status answered), the value it returns (result, boundary JSON). Its
-- arguments are kept with its mark (calls_sent.args), for the calls of functions not marked
-- idempotent only. SQLite cannot change a CHECK in place: approvals is built again.
CREATE TABLE approvals_0012 (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    run TEXT NOT NULL REFERENCES runs(id),
    kind TEXT NOT NULL CHECK (kind IN ('run', 'host_call', 'in_doubt')),
    interruption TEXT,
    function TEXT,
    args TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'cancelled',
                                            'answered')),
    requested_by TEXT NOT NULL,
    department TEXT NOT NULL,
    template TEXT,
    version INTEGER,
    created TEXT NOT NULL,
    decided_by TEXT,
    decided TEXT,
    comment TEXT,
    consumed INTEGER NOT NULL DEFAULT 0, -- its decision went into a resume
    connector TEXT,
    sent TEXT,
    idempotency_key TEXT,
    call_seq INTEGER,
    args_sha256 TEXT,
    result TEXT
);
INSERT INTO approvals_0012 (seq, id, run, kind, interruption, function, args, status,
                            requested_by, department, template, version, created, decided_by,
                            decided, comment, consumed)
    SELECT seq, id, run, kind, interruption, function, args, status, requested_by, department,
           template, version, created, decided_by, decided, comment, consumed FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_0012 RENAME TO approvals;
CREATE INDEX approvals_status ON approvals(status, seq);
CREATE INDEX approvals_run ON approvals(run);
ALTER TABLE calls_sent ADD COLUMN args TEXT;
