-- 0013_replay: a submitted version replayed against the journals of recent runs of the approved
-- version it would replace (docs/server.md "Replay before approval"). One row per replayed
-- version: the approved version whose runs were replayed (against; NULL when none was approved:
-- nothing to replay), the result as the API answers it (a JSON object), and when it was made.
CREATE TABLE version_replays (
    template TEXT NOT NULL,
    version INTEGER NOT NULL,
    against INTEGER,
    result TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (template, version),
    FOREIGN KEY (template, version) REFERENCES versions(template, version)
);
