-- 0019_inbox: what an approver is shown and how long a run waits for one (docs/server.md
-- "Approvals"). A department's approval_ttl_ms is how long a run of it may wait for a person
-- (default 7 days); an approval of a sensitive call keeps the line of the run's source that
-- made the call (0: not known).
ALTER TABLE departments ADD COLUMN approval_ttl_ms INTEGER NOT NULL DEFAULT 604800000;
ALTER TABLE approvals ADD COLUMN line INTEGER NOT NULL DEFAULT 0;
