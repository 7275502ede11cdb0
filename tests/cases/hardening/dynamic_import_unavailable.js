// No module loader: dynamic import() rejects and loads nothing.
try {
  await import("os");
  return "imported";
} catch (e) {
  return e.name;
}
