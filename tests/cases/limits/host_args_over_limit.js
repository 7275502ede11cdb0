return await echo.f("x".repeat(2000));
