-- 0012: the number of another change to the schema, which replaces this file.
SELECT 1;
