-- 0008_one_node: SQLite is one node's store, where runs.node stays NULL: the index of runs by
-- node cost every run's start and end a page of the WAL and served no query (a node's own
-- runs are found through runs_status).
DROP INDEX runs_node;
