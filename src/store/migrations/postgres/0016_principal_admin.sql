-- 0016_principal_admin (PostgreSQL): a principal's identity and disabled flag, as ../0016.
ALTER TABLE principals ADD COLUMN identity TEXT;
ALTER TABLE principals ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1));
CREATE UNIQUE INDEX principals_identity ON principals(identity) WHERE identity IS NOT NULL;
