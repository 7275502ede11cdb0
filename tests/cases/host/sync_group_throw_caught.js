try { sync.fail(); return "no error"; } catch (e) { return [e.name, e.message, e instanceof Error]; }
