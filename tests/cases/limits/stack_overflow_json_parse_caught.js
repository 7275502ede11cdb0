// JSON.parse of deeply nested text overflows the stack inside the parser: the run ends
// STACK_OVERFLOW although the guest catches the error and returns normally.
const text = "[".repeat(300000) + "]".repeat(300000);
try { JSON.parse(text); } catch (e) { console.log("caught", e.name); }
return "escaped";
