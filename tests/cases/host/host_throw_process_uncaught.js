await echo.fail();
