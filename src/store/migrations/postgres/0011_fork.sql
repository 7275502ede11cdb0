-- 0011_fork: a run forked from another (POST /v1/runs/{id}/fork, docs/server.md "Durable runs")
-- names the run it was forked from and the call from which it went live (at_call, from 1); both
-- NULL for every other run.
ALTER TABLE runs ADD COLUMN forked_from TEXT;
ALTER TABLE runs ADD COLUMN at_call BIGINT;
