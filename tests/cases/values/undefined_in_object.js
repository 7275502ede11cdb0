// An own property whose value is undefined stays an own property.
const r = await echo.f({ a: undefined, b: 1 });
return [Object.keys(r[0]), "a" in r[0], r[0].a === undefined, { a: undefined }];
