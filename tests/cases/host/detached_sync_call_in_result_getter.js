// Also a synchronous group: no call starts once the guest has returned.
return { get x() { return sync.f(1); } };
