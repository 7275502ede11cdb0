// Returning after a race while the loser is still in flight is DETACHED_BRIDGE_REQUEST.
return await Promise.race([sl.f(), echo.f(2)]);
