// A loaded module counts against the source limit like the entry.
return (await import("./big.mjs")).big.length;
