-- 0003_templates: templates and their numbered versions. A version's content (source, language,
-- input_schema, functions, autonomy, limits) never changes once written; only its state moves,
-- draft -> submitted -> approved | rejected, approved -> revoked, and each move keeps when and
-- by whom. digest is "sha256:" + hex of the RFC 8785 form of the content.
CREATE TABLE templates (
    name TEXT PRIMARY KEY,
    department TEXT NOT NULL REFERENCES departments(name),
    description TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX templates_department ON templates(department, name);
CREATE TABLE versions (
    template TEXT NOT NULL REFERENCES templates(name),
    version INTEGER NOT NULL CHECK (version >= 1),
    state TEXT NOT NULL DEFAULT 'draft'
        CHECK (state IN ('draft', 'submitted', 'approved', 'rejected', 'revoked')),
    source TEXT NOT NULL,
    language TEXT NOT NULL CHECK (language IN ('js', 'ts')),
    input_schema TEXT NOT NULL,
    functions TEXT NOT NULL,
    autonomy TEXT NOT NULL CHECK (autonomy IN ('autonomous', 'supervised')),
    limits TEXT NOT NULL,
    digest TEXT NOT NULL,
    author TEXT NOT NULL,
    created TEXT NOT NULL,
    submitted TEXT,
    submitted_by TEXT,
    approved TEXT,
    approved_by TEXT,
    approve_comment TEXT,
    rejected TEXT,
    rejected_by TEXT,
    reject_comment TEXT,
    revoked TEXT,
    revoked_by TEXT,
    revoke_reason TEXT,
    PRIMARY KEY (template, version)
);
