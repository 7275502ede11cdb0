// Waiting on something else while an unobserved call is pending does not hang.
echo.f(1);
await new Promise(() => {});
