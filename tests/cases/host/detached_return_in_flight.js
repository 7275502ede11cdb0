// Returning while an awaited-later call is still in flight is DETACHED_BRIDGE_REQUEST.
const slow = sl.f();
slow.then(() => {});
await null;
return "returned early";
