-- 0009_fewer_index_pages: every page a commit changes is a frame of the WAL, so an index costs
-- each run's start and end a page for every part of it they touch. Two indexes no query of
-- SQLite's uses go: the audit and run listings filter with "(?1 IS NULL OR action = ?1)",
-- which SQLite plans as a walk of the rowid from `after` whatever the argument, so audit_action
-- (run.start, run.host_call and run.end each in its own part of it) and runs_template served
-- nothing. runs_status gives way to two partial indexes of the only statuses looked up by it
-- (recovery's running runs, the queue's oldest queued run): they hold the live runs only, so a
-- run's end takes its entry out of a page it is already in, instead of also adding one where
-- the ended runs are. PostgreSQL keeps its indexes (its 0009 does nothing).
DROP INDEX audit_action;
DROP INDEX runs_template;
DROP INDEX runs_status;
CREATE INDEX runs_running ON runs(seq) WHERE status = 'running';
CREATE INDEX runs_queued ON runs(seq) WHERE status = 'queued';
