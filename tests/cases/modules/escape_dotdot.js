// ".." that would leave the module root is refused before anything is read.
try { await import("../../../../etc/passwd"); } catch (e) { return e.message; }
