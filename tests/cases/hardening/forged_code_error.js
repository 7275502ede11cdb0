// A guest cannot forge an error code: the code property of a thrown Error is ignored.
const e = new Error("x");
e.code = "TIMEOUT";
throw e;
