-- 0008_one_node (PostgreSQL): nothing. SQLite's 0008 drops an index that only several nodes
-- use; PostgreSQL keeps it.
SELECT 1;
