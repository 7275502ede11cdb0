// The guest sees an Error whose message is the command's stderr, trimmed.
try {
  await h.f();
  return "no error";
} catch (e) {
  return [e.name, e.message, e instanceof Error];
}
