// Calling a member that does not exist names the callee expression, as V8 does.
const api = { list() { return []; } };
api.lsit();
