// ["xxx..."] is 1000 + 4 bytes, under 1 KiB
return (await echo.f("x".repeat(1000)))[0].length;
