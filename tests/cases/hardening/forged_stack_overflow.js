// Only a real stack overflow is STACK_OVERFLOW, not an error that looks like one.
const e = new Error("stack overflow");
e.name = "InternalError";
throw e;
