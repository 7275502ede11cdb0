-- 0018_webhooks: notifications by webhook (docs/webhooks.md). A webhook is an admin's
-- subscription: the URL airlockd POSTs to, the event types it wants (a JSON array of names), the
-- department whose events it gets ('*': all), the body's format and its signing secret, sealed by
-- airlockd as a connector's (src/server/secretbox.c, "v1:" + hex). A delivery is one event for one
-- webhook, written in the transaction of what caused the event (the outbox): its body is the
-- event as sent, `event` its id (the same on every attempt). The delivery thread of a node claims
-- a due delivery by setting lease_node and lease_until_ms, sends it outside any transaction, then
-- records delivered, or the next attempt's time (next_ms), or failed once it has tried for a day.
-- Times in ms since the Unix epoch.
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    department TEXT NOT NULL,
    format TEXT NOT NULL CHECK (format IN ('json', 'slack')),
    secret TEXT NOT NULL,
    created TEXT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE TABLE webhook_deliveries (
    seq INTEGER PRIMARY KEY,
    webhook TEXT NOT NULL,
    event TEXT NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    first_ms INTEGER NOT NULL,
    next_ms INTEGER NOT NULL,
    lease_node TEXT,
    lease_until_ms INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    UNIQUE (webhook, event)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_ms);
