// BUG: the run fails with TIMEOUT as it should, but the CLI then reports "host process: exited
// while host calls were pending" (the co-process exits on the EOF airlock itself sends when the
// run ends) and exits 2 instead of 1.
return sync.slow();
