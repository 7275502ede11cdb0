// A host call started while the result is read (a getter of the returned object) can never be
// awaited: the run fails DETACHED_BRIDGE_REQUEST and the call never reaches the host.
return { get x() { echo.f(1); return 1; } };
