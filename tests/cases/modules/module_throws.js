// A module that throws while it initializes: the importer sees its error.
try { await import("./throws.mjs"); } catch (e) { return [e.name, e.message]; }
