// The exact set of globals (documented list; eval and Function exist but throw).
return Object.getOwnPropertyNames(globalThis).sort();
