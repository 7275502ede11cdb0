// Promise.all rejects with the host's error. (Only one host call in the race: with two, the
// guest could return while the other is still in flight, which is DETACHED_BRIDGE_REQUEST.)
try { await Promise.all([Promise.resolve(1), h.f()]); return "no error"; } catch (e) { return e.message; }
