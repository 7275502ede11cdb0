-- 0014_mounts: the mounts table (docs/server.md "Mounts"); its number is kept for the branch that
-- adds it, and this stands in for it until then.
SELECT 1;
