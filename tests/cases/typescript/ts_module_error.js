// A loaded TypeScript module that cannot be stripped: the importer's error names it.
try { await import("./broken.ts"); } catch (e) { return [e.name, e.message.includes("/broken.ts:2:")]; }
