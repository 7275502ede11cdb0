// Wrapping the host's error in a new one makes it the guest's error.
try { await h.f(); } catch (e) { throw new Error("wrapped: " + e.message); }
