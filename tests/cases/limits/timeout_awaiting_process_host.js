// BUG: as timeout_awaiting_sync_host, with an asynchronous co-process call: exit 2, not 1.
return await echo.slow();
