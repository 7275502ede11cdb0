-- 0003_templates (PostgreSQL): templates and their numbered versions, as ../0003.
CREATE TABLE templates (
    name TEXT COLLATE "C" PRIMARY KEY,
    department TEXT COLLATE "C" NOT NULL REFERENCES departments(name),
    description TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX templates_department ON templates(department, name);
CREATE TABLE versions (
    template TEXT COLLATE "C" NOT NULL REFERENCES templates(name),
    version BIGINT NOT NULL CHECK (version >= 1),
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
