-- 0002_audit_chain: the audit log's hash chain (docs/audit.md). prev and hash are lowercase hex;
-- line is the record's canonical export line (hash included), what the verifier reads.
ALTER TABLE audit ADD COLUMN prev TEXT;
ALTER TABLE audit ADD COLUMN hash TEXT;
ALTER TABLE audit ADD COLUMN line TEXT;
CREATE INDEX audit_action ON audit(action, seq);
