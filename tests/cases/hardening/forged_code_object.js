// A thrown plain object that looks like an airlock error is still USER_ERROR.
throw { code: "TIMEOUT", name: "TimeoutError", message: "the run exceeded its timeout" };
