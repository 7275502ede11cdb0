return await echo.big();
