// Modules have no top-level await in this engine: a promise as the default export is awaited.
export default (async () => {
  const { double } = await import("./lib/util.mjs");
  return double(await Promise.resolve(4));
})();
