return (await echo.big()).length;
