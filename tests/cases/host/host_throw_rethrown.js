// Rethrowing the host's own error keeps HOST_FUNCTION_ERROR.
try { await h.f(); } catch (e) { throw e; }
