-- 0002_audit_chain (PostgreSQL): the audit log's hash chain (docs/audit.md), as ../0002.
ALTER TABLE audit ADD COLUMN prev TEXT;
ALTER TABLE audit ADD COLUMN hash TEXT;
ALTER TABLE audit ADD COLUMN line TEXT;
CREATE INDEX audit_action ON audit(action, seq);
