// A value structuredClone cannot clone: the value format's message, with the path.
try {
  structuredClone({ items: [1, { fn() {} }] });
} catch (e) {
  return [e.name, e.message, e instanceof Error];
}
