-- 0016_principal_admin: a principal of kind user may be linked to the identity its identity
-- provider signs it in as (at most one principal per identity), and any principal may be
-- disabled: its keys and sessions are then refused (docs/server.md "Keys, roles, permissions").
ALTER TABLE principals ADD COLUMN identity TEXT;
ALTER TABLE principals ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1));
CREATE UNIQUE INDEX principals_identity ON principals(identity) WHERE identity IS NOT NULL;
