// Deeply nested groups overflow the stack in the RegExp compiler: the run ends STACK_OVERFLOW
// although the guest catches the error and returns normally.
const source = "(?:".repeat(200000) + "a" + ")".repeat(200000);
try { new RegExp(source); } catch (e) { console.log("caught", e.name); }
return "escaped";
