// The deadline holds while the guest waits for a slow host.
return await sl.f();
