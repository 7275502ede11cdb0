-- 0006_nodes: several airlockd on one database (docs/server.md "Several nodes"). A node renews
-- its heartbeat (ms since the epoch, the store's clock) within its lease; a running run names
-- the node executing it; a connector call is marked sent before it leaves, and the marks of a
-- run's execution go once its end (or wait) is recorded, so the marks left by a dead node are
-- the calls whose outcome is unknown. SQLite is one node's: it keeps the tables empty.
CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    heartbeat INTEGER NOT NULL,
    lease_ms INTEGER NOT NULL,
    started TEXT NOT NULL
);
ALTER TABLE runs ADD COLUMN node TEXT;
CREATE INDEX runs_node ON runs(node, status);
CREATE TABLE calls_sent (
    run TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    function TEXT NOT NULL,
    idempotent INTEGER NOT NULL,
    sent TEXT NOT NULL,
    PRIMARY KEY (run, idempotency_key)
);
