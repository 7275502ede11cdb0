-- 0017: a number held for a migration of another change, kept empty so the numbers stay consecutive;
-- replaced by that migration when the changes meet.
SELECT 1;
