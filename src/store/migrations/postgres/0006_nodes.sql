-- 0006_nodes (PostgreSQL): several airlockd on one database, as ../0006. heartbeat is ms since
-- the epoch on the database server's clock, so the nodes' own clocks need not agree.
CREATE TABLE nodes (
    id TEXT COLLATE "C" PRIMARY KEY,
    heartbeat BIGINT NOT NULL,
    lease_ms BIGINT NOT NULL,
    started TEXT NOT NULL
);
ALTER TABLE runs ADD COLUMN node TEXT COLLATE "C";
CREATE INDEX runs_node ON runs(node, status);
CREATE TABLE calls_sent (
    run TEXT COLLATE "C" NOT NULL,
    idempotency_key TEXT COLLATE "C" NOT NULL,
    function TEXT NOT NULL,
    idempotent INTEGER NOT NULL,
    sent TEXT NOT NULL,
    PRIMARY KEY (run, idempotency_key)
);
