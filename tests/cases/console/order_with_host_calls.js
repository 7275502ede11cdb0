console.log("before");
const v = await echo.f(1);
console.warn("after", JSON.stringify(v));
return 0;
