// Awaiting a promise nothing can settle fails at once instead of waiting for the timeout.
await new Promise(() => {});
