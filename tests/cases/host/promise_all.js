return await Promise.all([echo.f(1), echo.f(2), echo.f(3)]);
