// Empty entries still cost a byte each (their line break): a flood of them ends at the limit
// instead of growing the host without bound.
for (;;) console.log();
