// A rejection nobody awaits does not change the result (no unhandled-rejection failure).
Promise.reject(new Error("ignored"));
return "done";
