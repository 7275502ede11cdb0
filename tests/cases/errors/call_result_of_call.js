// The callee may itself be a call: the message quotes it as written.
function make() { return 1; }
make()();
