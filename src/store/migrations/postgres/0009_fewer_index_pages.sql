-- 0009_fewer_index_pages (PostgreSQL): nothing. SQLite's 0009 trades indexes its planner never
-- uses, and one over every run, for two over the live runs; PostgreSQL keeps its own.
SELECT 1;
