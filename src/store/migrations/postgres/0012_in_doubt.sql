-- 0012_in_doubt (PostgreSQL): a person settles the call in doubt, as ../0012.
ALTER TABLE approvals DROP CONSTRAINT approvals_kind_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_kind_check
    CHECK (kind IN ('run', 'host_call', 'in_doubt'));
ALTER TABLE approvals DROP CONSTRAINT approvals_status_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_status_check
    CHECK (status IN ('pending', 'approved', 'denied', 'cancelled', 'answered'));
ALTER TABLE approvals ADD COLUMN connector TEXT;
ALTER TABLE approvals ADD COLUMN sent TEXT;
ALTER TABLE approvals ADD COLUMN idempotency_key TEXT;
ALTER TABLE approvals ADD COLUMN call_seq BIGINT;
ALTER TABLE approvals ADD COLUMN args_sha256 TEXT;
ALTER TABLE approvals ADD COLUMN result TEXT;
ALTER TABLE calls_sent ADD COLUMN args TEXT;
