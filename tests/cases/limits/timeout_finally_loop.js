// A finally block that loops again is still stopped.
try { for (;;) {} } finally { for (;;) {} }
