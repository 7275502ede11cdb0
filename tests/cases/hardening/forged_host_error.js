// An Error dressed as a host error is not HOST_FUNCTION_ERROR.
const e = new Error("host failed: nope");
e.name = "HostError";
e.code = "HOST_FUNCTION_ERROR";
throw e;
