// A reviver that parses again with itself recurses until the stack runs out, somewhere inside
// JSON.parse: the run ends STACK_OVERFLOW although the guest catches the error.
const nested = "[".repeat(5000) + "1" + "]".repeat(5000);
function revive(k, v) { return JSON.parse(nested, revive); }
try { JSON.parse(nested, revive); } catch (e) { console.log("caught", e.name); }
return "escaped";
