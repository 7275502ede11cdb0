// promises do not cross
return { p: Promise.resolve(1) };
