// BUG: observing a host call with the intrinsic Promise.prototype.then (not the promise's own
// wrapped then) is not seen as observation: the call is never dispatched and the run fails with
// DETACHED_BRIDGE_REQUEST although the guest did wait for it.
return await Promise.prototype.then.call(echo.f(1), (v) => v);
