// node:fs/promises from a function body: readFile without an encoding gives bytes.
const fs = await import('node:fs/promises');
const b = await fs.readFile('/workspace/data.csv');
return [b instanceof Uint8Array, b.length, b[0]];
